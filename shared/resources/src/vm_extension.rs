//! Extensions (`Microsoft.Compute/virtualMachines/extensions`) of AzureMachines' VMs: those the
//! spec lists in `vmExtensions`, and CAPZ's bootstrap check when `disableVMBootstrapExtension`
//! is explicitly `false`. AzureMachinePools ask for the same list ([`wanted`]), which their scale
//! set carries in its model. The check waits for the sentinel file a bootstrap provider writes once
//! the node joined (5 s apart, 60 times), so the extension ends `Failed` when bootstrapping did.
//!
//! As in CAPZ, an extension's ARM `type` is its spec name, none is made when
//! `disableExtensionOperations` is set, the bootstrap check exists only in Azure's public cloud
//! (where its publisher ships it), and an extension dropped from the spec stays on the VM. Unlike
//! CAPZ, an extension whose publisher, version or settings changed in the spec is written again.

use std::collections::BTreeMap;

use capz_api::AzureMachineSpec;
use capz_api::common::compute::{VmExtension as SpecExtension, VmProfile};
use capz_azure::models::compute::{
    VirtualMachineExtension as Model, VirtualMachineExtensionProperties as Properties,
};
use capz_azure::models::{Secret, id_of};
use capz_azure::{IdError, Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};

use crate::image::windows;

/// The bootstrap check of Linux machines.
pub const LINUX_BOOTSTRAP: &str = "CAPZ.Linux.Bootstrapping";
/// The bootstrap check of Windows machines.
pub const WINDOWS_BOOTSTRAP: &str = "CAPZ.Windows.Bootstrapping";
/// Who publishes the bootstrap checks.
const BOOTSTRAP_PUBLISHER: &str = "Microsoft.Azure.ContainerUpstream";
/// The file Cluster API bootstrap providers write once a node has joined.
const SENTINEL: &str = "/run/cluster-api/bootstrap-success.complete";
/// The only cloud the bootstrap checks are published in.
const PUBLIC_CLOUD: &str = "AzurePublicCloud";

/// The Linux check: look for the sentinel 60 times, 5 s apart; fail when it never shows.
fn linux_check() -> String {
    format!(
        "for i in $(seq 1 60); do test -f {SENTINEL} && break; if [ $i -eq 60 ]; then exit 1; else sleep 5; fi; done"
    )
}

/// The Windows check, in PowerShell; it exits -2 (file not found) when the sentinel never shows.
fn windows_check() -> String {
    format!(
        "powershell.exe -Command \"for ($i = 0; $i -lt 60; $i++) {{if (Test-Path '{SENTINEL}') {{exit 0}} else {{Start-Sleep -Seconds 5}}}} exit -2\""
    )
}

/// Whether VMs of `size` run on Arm CPUs: Azure's size names mark those with a `p` among the
/// feature letters after the vCPU count (`Standard_D4pds_v5`).
#[must_use]
pub fn is_arm64_size(size: &str) -> bool {
    let name = size.split_once('_').map_or(size, |(_, rest)| rest);
    let name = name.split('_').next().unwrap_or_default();
    let Some(digits) = name.find(|c: char| c.is_ascii_digit()) else {
        return false;
    };
    name[digits..]
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '-')
        .contains(['p', 'P'])
}

/// An extension of a machine, as the spec wants it.
#[derive(Debug, Clone)]
pub struct VmExtension {
    id: ResourceId,
    location: Location,
    publisher: String,
    version: String,
    settings: Option<BTreeMap<String, String>>,
    protected_settings: Option<BTreeMap<String, String>>,
}

impl VmExtension {
    fn new(vm: &ResourceId, location: &Location, spec: &SpecExtension) -> Result<Self, IdError> {
        Ok(Self {
            id: id_of::<Model>(vm, &spec.name)?,
            location: location.clone(),
            publisher: spec.publisher.clone(),
            version: spec.version.clone(),
            settings: spec.settings.clone(),
            protected_settings: spec.protected_settings.clone(),
        })
    }

    /// Whether this is one of the bootstrap checks.
    #[must_use]
    pub fn is_bootstrap_check(&self) -> bool {
        is_bootstrap_check(&self.id.name())
    }
}

/// Whether the extension `name` is one of the bootstrap checks.
#[must_use]
pub fn is_bootstrap_check(name: &str) -> bool {
    name == LINUX_BOOTSTRAP || name == WINDOWS_BOOTSTRAP
}

/// The bootstrap check of a machine built from `vm`, if it gets one.
fn bootstrap_check(vm: &VmProfile, environment: Option<&str>) -> Option<SpecExtension> {
    let public = environment.is_none_or(|cloud| cloud.is_empty() || cloud.eq_ignore_ascii_case(PUBLIC_CLOUD));
    if vm.disable_vm_bootstrap_extension != Some(false) || !public {
        return None;
    }
    let (name, version, command) = if windows(vm) {
        (WINDOWS_BOOTSTRAP, "1.0", windows_check())
    } else if is_arm64_size(&vm.vm_size) {
        // The 1.0 handler does not run on Arm machines.
        (LINUX_BOOTSTRAP, "1.1", linux_check())
    } else {
        (LINUX_BOOTSTRAP, "1.0", linux_check())
    };
    Some(SpecExtension {
        name: name.to_owned(),
        publisher: BOOTSTRAP_PUBLISHER.to_owned(),
        version: version.to_owned(),
        settings: None,
        protected_settings: Some(BTreeMap::from([("commandToExecute".to_owned(), command)])),
    })
}

/// The extensions a machine (or every instance of a pool) built from `vm` runs, in the cloud
/// named by the AzureCluster's `azureEnvironment`: the spec's, then the bootstrap check.
#[must_use]
pub fn wanted(vm: &VmProfile, environment: Option<&str>) -> Vec<SpecExtension> {
    vm.vm_extensions
        .iter()
        .flatten()
        .cloned()
        .chain(bootstrap_check(vm, environment))
        .collect()
}

/// The extensions of the VM `vm` of a machine built from `spec` (see [`wanted`]); none when the
/// spec sets `disableExtensionOperations`.
///
/// # Errors
/// When an extension's name is not a valid resource name.
pub fn for_machine(
    vm: &ResourceId,
    location: &Location,
    spec: &AzureMachineSpec,
    environment: Option<&str>,
) -> Result<Vec<VmExtension>, IdError> {
    if spec.disable_extension_operations == Some(true) {
        return Ok(Vec::new());
    }
    wanted(&spec.vm, environment)
        .iter()
        .map(|extension| VmExtension::new(vm, location, extension))
        .collect()
}

impl AzureResource for VmExtension {
    type Model = Model;
    const SERVICE: &'static str = "vmextensions";
    // A failed extension (the bootstrap check) is left to a person, as CAPZ does.
    const REPAIR_FAILED: bool = false;

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::OwnedParent
    }

    /// Nothing when what Azure holds names the same handler, version and settings (protected
    /// settings are never answered, so they cannot be compared).
    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        let name = self.id.name().into_owned();
        let held = existing.and_then(|existing| existing.properties.as_ref());
        let settings = |settings: Option<&BTreeMap<String, String>>| settings.cloned().unwrap_or_default();
        if held.is_some_and(|held| {
            held.publisher.as_deref() == Some(self.publisher.as_str())
                && held.extension_type.as_deref() == Some(name.as_str())
                && held.type_handler_version.as_deref() == Some(self.version.as_str())
                && settings(held.settings.as_ref()) == settings(self.settings.as_ref())
        }) {
            return None;
        }
        Some(Model {
            location: Some(self.location.clone()),
            properties: Some(Properties {
                publisher: Some(self.publisher.clone()),
                extension_type: Some(name),
                type_handler_version: Some(self.version.clone()),
                settings: self.settings.clone(),
                protected_settings: self.protected_settings.clone().map(Secret::new),
                ..Properties::default()
            }),
            ..Model::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VM: &str = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/m-0";

    fn spec(extra: &serde_json::Value) -> AzureMachineSpec {
        let mut value = serde_json::json!({
            "vmSize": "Standard_D2s_v3",
            "osDisk": {"osType": "Linux", "diskSizeGB": 128},
        });
        if let (Some(value), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
            value.extend(extra.clone());
        }
        serde_json::from_value(value).unwrap()
    }

    fn extensions(extra: &serde_json::Value, environment: Option<&str>) -> Vec<VmExtension> {
        for_machine(
            &VM.parse().unwrap(),
            &"westeurope".parse().unwrap(),
            &spec(extra),
            environment,
        )
        .unwrap()
    }

    fn names(extensions: &[VmExtension]) -> Vec<String> {
        extensions
            .iter()
            .map(|extension| extension.id().name().into_owned())
            .collect()
    }

    #[test]
    fn spec_extensions_are_written_with_their_settings_and_again_only_when_they_change() {
        let custom = serde_json::json!({"vmExtensions": [{
            "name": "CustomScript", "publisher": "Microsoft.Azure.Extensions", "version": "2.1",
            "settings": {"fileUris": "https://example.com/hello.sh"},
            "protectedSettings": {"commandToExecute": "./hello.sh"},
        }]});
        let found = extensions(&custom, None);
        assert_eq!(names(&found), ["CustomScript"]);
        let extension = &found[0];
        assert_eq!(
            extension.id().to_string(),
            format!("{VM}/extensions/CustomScript")
        );
        assert!(!extension.is_bootstrap_check());
        let body = extension.desired(None).unwrap();
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            serde_json::json!({"location": "westeurope", "properties": {
                "publisher": "Microsoft.Azure.Extensions",
                "type": "CustomScript",
                "typeHandlerVersion": "2.1",
                "settings": {"fileUris": "https://example.com/hello.sh"},
                "protectedSettings": {"commandToExecute": "./hello.sh"},
            }})
        );
        assert!(!format!("{body:?}").contains("./hello.sh"));

        // Azure answers without the protected settings and with defaults of its own.
        let mut answered = serde_json::to_value(&body).unwrap();
        answered["properties"]["protectedSettings"] = serde_json::Value::Null;
        answered["properties"]["autoUpgradeMinorVersion"] = false.into();
        answered["properties"]["provisioningState"] = "Succeeded".into();
        let answered: Model = serde_json::from_value(answered).unwrap();
        assert_eq!(extension.desired(Some(&answered)), None);
        let mut moved = answered.clone();
        if let Some(properties) = moved.properties.as_mut() {
            properties.type_handler_version = Some("2.0".into());
        }
        assert!(extension.desired(Some(&moved)).is_some());
    }

    #[test]
    fn the_bootstrap_check_comes_only_when_asked_for_in_the_public_cloud() {
        let asked = serde_json::json!({"disableVMBootstrapExtension": false});
        assert!(
            extensions(&serde_json::json!({}), None).is_empty(),
            "unset means disabled"
        );
        assert!(extensions(&serde_json::json!({"disableVMBootstrapExtension": true}), None).is_empty());
        assert!(extensions(&asked, Some("AzureChinaCloud")).is_empty());
        let disabled =
            serde_json::json!({"disableVMBootstrapExtension": false, "disableExtensionOperations": true});
        assert!(extensions(&disabled, None).is_empty());

        let linux = extensions(&asked, Some("AzurePublicCloud"));
        assert_eq!(names(&linux), [LINUX_BOOTSTRAP]);
        assert!(linux[0].is_bootstrap_check());
        let body = serde_json::to_value(linux[0].desired(None).unwrap()).unwrap();
        assert_eq!(
            body["properties"]["publisher"],
            "Microsoft.Azure.ContainerUpstream"
        );
        assert_eq!(body["properties"]["type"], LINUX_BOOTSTRAP);
        assert_eq!(body["properties"]["typeHandlerVersion"], "1.0");
        let command = body["properties"]["protectedSettings"]["commandToExecute"]
            .as_str()
            .unwrap();
        assert!(
            command.contains("test -f /run/cluster-api/bootstrap-success.complete"),
            "{command}"
        );

        let arm = serde_json::json!({"disableVMBootstrapExtension": false, "vmSize": "Standard_D4pds_v5"});
        let body = serde_json::to_value(extensions(&arm, None)[0].desired(None).unwrap()).unwrap();
        assert_eq!(body["properties"]["typeHandlerVersion"], "1.1");

        let windows = serde_json::json!({"disableVMBootstrapExtension": false,
            "osDisk": {"osType": "Windows", "diskSizeGB": 128}});
        let found = extensions(&windows, None);
        assert_eq!(names(&found), [WINDOWS_BOOTSTRAP]);
        let body = serde_json::to_value(found[0].desired(None).unwrap()).unwrap();
        let command = body["properties"]["protectedSettings"]["commandToExecute"]
            .as_str()
            .unwrap();
        assert!(
            command.starts_with("powershell.exe -Command \"for ($i = 0; $i -lt 60;"),
            "{command}"
        );
        assert!(command.ends_with("exit -2\""), "{command}");
    }

    #[test]
    fn arm_sizes_are_told_by_their_feature_letters() {
        for arm in [
            "Standard_D4pds_v5",
            "Standard_B2pls_v2",
            "Standard_E8ps_v6",
            "Standard_D2plds_v5",
        ] {
            assert!(is_arm64_size(arm), "{arm}");
        }
        for x64 in [
            "Standard_D2s_v3",
            "Standard_NP10s",
            "Standard_E4-2ds_v4",
            "Standard_DC2as_v5",
            "Basic_A0",
        ] {
            assert!(!is_arm64_size(x64), "{x64}");
        }
    }
}
