//! What may not change on an AKS control plane once it exists, and on its template, as CAPZ
//! lists it: most of the network and the identity, the API server's privacy; what was turned on
//! (AAD, the OIDC issuer, add-ons, security profiles, an upgrade channel) may be turned off by
//! its flag but not removed; the version only goes up.

use std::cmp::Ordering;

use capz_api::azuremanagedcontrolplane::{
    AksExtension, ApiServerAccessProfile, AzureManagedControlPlaneClassSpec,
    ManagedControlPlaneVirtualNetwork, NetworkPluginMode,
};
use capz_api::{AzureManagedControlPlane, AzureManagedControlPlaneTemplate};
use serde::Serialize;

use crate::field::{FieldError, FieldPath, Verdict};
use crate::immutable::unchanged;
use crate::version;

/// A text field read as CAPZ compares it: empty is unset.
fn set(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

/// Rejects any change of `old` to `new` at `at`, with CAPZ's wording.
fn same<T: PartialEq + Serialize>(at: FieldPath, old: Option<&T>, new: Option<&T>, verdict: &mut Verdict) {
    verdict.errors.extend(unchanged(at, old, new));
}

/// The fields both kinds keep: at `at`, the class spec of the old and the new object.
fn check_class_update(
    old: &AzureManagedControlPlaneClassSpec,
    new: &AzureManagedControlPlaneClassSpec,
    at: &FieldPath,
    verdict: &mut Verdict,
) {
    same(
        at.child("subscriptionID"),
        old.subscription_id.as_ref(),
        new.subscription_id.as_ref(),
        verdict,
    );
    same(
        at.child("location"),
        set(&old.location).as_ref(),
        set(&new.location).as_ref(),
        verdict,
    );
    same(
        at.child("dnsServiceIP"),
        old.dns_service_ip.as_ref(),
        new.dns_service_ip.as_ref(),
        verdict,
    );
    same(
        at.child("networkPlugin"),
        old.network_plugin.as_ref(),
        new.network_plugin.as_ref(),
        verdict,
    );
    same(
        at.child("networkPolicy"),
        old.network_policy.as_ref(),
        new.network_policy.as_ref(),
        verdict,
    );
    same(
        at.child("networkDataplane"),
        old.network_dataplane.as_ref(),
        new.network_dataplane.as_ref(),
        verdict,
    );
    same(
        at.child("loadBalancerSKU"),
        old.load_balancer_sku.as_ref(),
        new.load_balancer_sku.as_ref(),
        verdict,
    );
    same(
        at.child("outboundType"),
        old.outbound_type.as_ref(),
        new.outbound_type.as_ref(),
        verdict,
    );
    if let Some(old_aad) = &old.aad_profile {
        let path = at.child("aadProfile");
        match &new.aad_profile {
            None => verdict.reject(FieldError::invalid(
                path,
                &(),
                "field cannot be nil, cannot disable AADProfile",
            )),
            Some(new_aad) => {
                if old_aad.managed && !new_aad.managed {
                    verdict.reject(FieldError::invalid(
                        path.child("managed"),
                        &false,
                        "cannot set AADProfile.Managed to false",
                    ));
                }
                if new_aad.admin_group_object_ids.is_empty() {
                    verdict.reject(FieldError::invalid(
                        path.child("adminGroupObjectIDs"),
                        &new_aad.admin_group_object_ids,
                        "length of AADProfile.AdminGroupObjectIDs cannot be zero",
                    ));
                }
            }
        }
    }
    if private_access(old.api_server_access_profile.as_ref())
        != private_access(new.api_server_access_profile.as_ref())
    {
        verdict.reject(FieldError::invalid(
            at.child("apiServerAccessProfile"),
            &new.api_server_access_profile,
            "fields (except for AuthorizedIPRanges) are immutable",
        ));
    }
    check_extensions_update(
        old.extensions.as_deref().unwrap_or_default(),
        new.extensions.as_deref().unwrap_or_default(),
        at,
        verdict,
    );
    check_security_profile_update(old, new, at, verdict);
    if version::compare(&new.version, &old.version) == Ordering::Less {
        verdict.reject(FieldError::invalid(
            at.child("version"),
            &new.version,
            "field version cannot be downgraded",
        ));
    }
}

/// The API server access settings that may not change: all but the authorized ranges.
fn private_access(profile: Option<&ApiServerAccessProfile>) -> ApiServerAccessProfile {
    profile
        .map(|profile| ApiServerAccessProfile {
            authorized_ip_ranges: None,
            ..profile.clone()
        })
        .unwrap_or_default()
}

/// An extension keeps its type, plan, scope, release train, version and identity.
fn check_extensions_update(
    old: &[AksExtension],
    new: &[AksExtension],
    at: &FieldPath,
    verdict: &mut Verdict,
) {
    fn shown(value: &impl Serialize) -> serde_json::Value {
        serde_json::to_value(value).unwrap_or_default()
    }
    for (i, extension) in new.iter().enumerate() {
        let Some(before) = old.iter().find(|before| before.name == extension.name) else {
            continue;
        };
        let both_set_and_differ =
            |a: &Option<String>, b: &Option<String>| a.is_some() && b.is_some() && a != b;
        let changes = [
            (
                "extensionType",
                !before.extension_type.is_empty()
                    && !extension.extension_type.is_empty()
                    && before.extension_type != extension.extension_type,
                shown(&extension.extension_type),
            ),
            (
                "plan",
                before.plan.is_some() && extension.plan.is_some() && before.plan != extension.plan,
                shown(&extension.plan),
            ),
            ("scope", before.scope != extension.scope, shown(&extension.scope)),
            (
                "releaseTrain",
                both_set_and_differ(&before.release_train, &extension.release_train),
                shown(&extension.release_train),
            ),
            (
                "version",
                both_set_and_differ(&before.version, &extension.version),
                shown(&extension.version),
            ),
            (
                "identity",
                before.identity != extension.identity,
                shown(&extension.identity),
            ),
        ];
        for (field, differs, value) in changes {
            if differs {
                verdict.reject(FieldError::invalid(
                    at.child("extensions").index(i).child(field),
                    &value,
                    "field is immutable",
                ));
            }
        }
    }
}

/// A security profile's parts, once given, are turned off by their flags, not removed.
fn check_security_profile_update(
    old: &AzureManagedControlPlaneClassSpec,
    new: &AzureManagedControlPlaneClassSpec,
    at: &FieldPath,
    verdict: &mut Verdict,
) {
    let Some(before) = &old.security_profile else {
        return;
    };
    let after = new.security_profile.as_ref();
    let at = at.child("securityProfile");
    let parts = [
        (
            "azureKeyVaultKms",
            before.azure_key_vault_kms.is_some(),
            after.is_some_and(|p| p.azure_key_vault_kms.is_some()),
            "cannot unset Spec.SecurityProfile.AzureKeyVaultKms profile to disable the profile please set Spec.SecurityProfile.AzureKeyVaultKms.Enabled to false",
        ),
        (
            "workloadIdentity",
            before.workload_identity.is_some(),
            after.is_some_and(|p| p.workload_identity.is_some()),
            "cannot unset Spec.SecurityProfile.WorkloadIdentity, to disable workloadIdentity please set Spec.SecurityProfile.WorkloadIdentity.Enabled to false",
        ),
        (
            "imageCleaner",
            before.image_cleaner.is_some(),
            after.is_some_and(|p| p.image_cleaner.is_some()),
            "cannot unset Spec.SecurityProfile.ImageCleaner, to disable imageCleaner please set Spec.SecurityProfile.ImageCleaner.Enabled to false",
        ),
        (
            "defender",
            before.defender.is_some(),
            after.is_some_and(|p| p.defender.is_some()),
            "cannot unset Spec.SecurityProfile.Defender, to disable defender please set Spec.SecurityProfile.Defender.SecurityMonitoring.Enabled to false",
        ),
    ];
    for (name, was, is, why) in parts {
        if was && !is {
            verdict.reject(FieldError::invalid(at.child(name), &(), why));
        }
    }
}

/// A network's name, range, resource group and subnet; the subnet's service endpoints may change.
fn check_network_update(
    old: Option<&ManagedControlPlaneVirtualNetwork>,
    new: Option<&ManagedControlPlaneVirtualNetwork>,
    at: &FieldPath,
    with_name: bool,
    verdict: &mut Verdict,
) {
    let (old, new) = (old.cloned().unwrap_or_default(), new.cloned().unwrap_or_default());
    let (old_subnet, new_subnet) = (old.subnet.unwrap_or_default(), new.subnet.unwrap_or_default());
    let at = at.child("virtualNetwork");
    let mut fields = vec![
        (
            at.child("cidrBlock"),
            old.cidr_block,
            new.cidr_block,
            "Virtual Network CIDRBlock is immutable",
        ),
        (
            at.child("subnet").child("name"),
            old_subnet.name,
            new_subnet.name,
            "Subnet Name is immutable",
        ),
        (
            at.child("subnet").child("cidrBlock"),
            old_subnet.cidr_block,
            new_subnet.cidr_block,
            "Subnet CIDRBlock is immutable",
        ),
    ];
    if with_name {
        fields.insert(
            0,
            (
                at.child("name"),
                old.name,
                new.name,
                "Virtual Network Name is immutable",
            ),
        );
        fields.push((
            at.child("resourceGroup"),
            old.resource_group.unwrap_or_default(),
            new.resource_group.unwrap_or_default(),
            "Virtual Network Resource Group is immutable",
        ));
    }
    for (path, before, after, why) in fields {
        if before != after {
            verdict.reject(FieldError::invalid(path, &after, why));
        }
    }
}

/// Every update check of a control plane; `old` is already re-defaulted.
pub(super) fn check_control_plane_update(
    old: &AzureManagedControlPlane,
    new: &AzureManagedControlPlane,
    verdict: &mut Verdict,
) {
    let at = FieldPath::root("spec");
    let (before, after) = (&old.spec, &new.spec);
    check_class_update(&before.class, &after.class, &at, verdict);
    same(
        at.child("resourceGroupName"),
        set(&before.class.resource_group_name).as_ref(),
        set(&after.class.resource_group_name).as_ref(),
        verdict,
    );
    same(
        at.child("nodeResourceGroupName"),
        before.node_resource_group_name.as_ref(),
        after.node_resource_group_name.as_ref(),
        verdict,
    );
    same(
        at.child("sshPublicKey"),
        before.ssh_public_key.as_ref(),
        after.ssh_public_key.as_ref(),
        verdict,
    );
    same(
        at.child("httpProxyConfig"),
        before.class.http_proxy_config.as_ref(),
        after.class.http_proxy_config.as_ref(),
        verdict,
    );
    same(
        at.child("azureEnvironment"),
        before.class.azure_environment.as_ref(),
        after.class.azure_environment.as_ref(),
        verdict,
    );
    if after.dns_prefix.is_some() {
        same(
            at.child("dnsPrefix"),
            before.dns_prefix.as_ref(),
            after.dns_prefix.as_ref(),
            verdict,
        );
    }
    check_network_update(
        before.class.virtual_network.as_ref(),
        after.class.virtual_network.as_ref(),
        &at,
        true,
        verdict,
    );
    check_switches(old, new, &at, verdict);
}

/// What was turned on stays, turned off by its flag: add-ons, AAD's local accounts, the upgrade
/// channel, the OIDC issuer; overlay is not turned on under a policy; the version stays at or
/// above what AKS upgraded to; the fleet member keeps its name.
fn check_switches(
    old: &AzureManagedControlPlane,
    new: &AzureManagedControlPlane,
    at: &FieldPath,
    verdict: &mut Verdict,
) {
    let (before, after) = (&old.spec, &new.spec);
    let names = |class: &AzureManagedControlPlaneClassSpec| -> Vec<String> {
        class
            .addon_profiles
            .iter()
            .flatten()
            .map(|addon| addon.name.clone())
            .collect()
    };
    let kept = names(&after.class);
    for (i, addon) in names(&before.class).iter().enumerate() {
        if !kept.contains(addon) {
            verdict.reject(FieldError::invalid(
                at.child("addonProfiles"),
                &kept,
                format!("cannot remove addonProfile {addon}, To disable this AddonProfile, update Spec.AddonProfiles[{i}].Enabled to false"),
            ));
        }
    }
    let overlay = |class: &AzureManagedControlPlaneClassSpec| {
        class.network_plugin_mode == Some(NetworkPluginMode::Overlay)
    };
    if !overlay(&before.class) && overlay(&after.class) && before.class.network_policy.is_some() {
        verdict.reject(FieldError::forbidden(
            at.child("networkPluginMode"),
            "\"overlay\" NetworkPluginMode cannot be enabled when NetworkPolicy is set",
        ));
    }
    match (
        before.class.disable_local_accounts,
        after.class.disable_local_accounts,
    ) {
        (None, Some(value)) if after.class.aad_profile.is_none() => verdict.reject(FieldError::invalid(
            at.child("disableLocalAccounts"),
            &value,
            "DisableLocalAccounts can be set only for AAD enabled clusters",
        )),
        (Some(was), is) => same(at.child("disableLocalAccounts"), Some(&was), is.as_ref(), verdict),
        _ => {}
    }
    let channel = |class: &AzureManagedControlPlaneClassSpec| {
        class
            .auto_upgrade_profile
            .as_ref()
            .and_then(|p| p.upgrade_channel)
    };
    if let (Some(was), None) = (channel(&before.class), channel(&after.class)) {
        verdict.reject(FieldError::invalid(
            at.child("autoUpgradeProfile").child("upgradeChannel"),
            &was,
            "field cannot be set to nil, to disable auto upgrades set the channel to none.",
        ));
    }
    if let Some(auto) = old
        .status
        .as_ref()
        .and_then(|status| status.auto_upgrade_version.as_deref())
        && !auto.is_empty()
        && after.class.version != before.class.version
        && version::compare(&after.class.version, auto) == Ordering::Less
    {
        verdict.reject(FieldError::invalid(
            at.child("version"),
            &after.class.version,
            format!("version is auto-upgraded to {auto}, cannot be downgraded"),
        ));
    }
    let oidc = |class: &AzureManagedControlPlaneClassSpec| {
        class.oidc_issuer_profile.as_ref().and_then(|p| p.enabled)
    };
    if oidc(&before.class) == Some(true) && oidc(&after.class) == Some(false) {
        verdict.reject(FieldError::forbidden(
            at.child("oidcIssuerProfile").child("enabled"),
            "cannot be disabled",
        ));
    }
    let member = |spec: &capz_api::AzureManagedControlPlaneSpec| {
        spec.fleets_member
            .as_ref()
            .map(|member| member.name.clone().unwrap_or_default())
    };
    if let (Some(was), Some(is)) = (member(before), member(after))
        && !was.is_empty()
        && was != is
    {
        verdict.reject(FieldError::forbidden(
            at.child("fleetsMember").child("name"),
            "Name is immutable",
        ));
    }
}

/// Every update check of a template; `old` is already re-defaulted.
pub(super) fn check_template_update(
    old: &AzureManagedControlPlaneTemplate,
    new: &AzureManagedControlPlaneTemplate,
    verdict: &mut Verdict,
) {
    let at = FieldPath::root("spec").child("template").child("spec");
    let (before, after) = (&old.spec.template.spec.class, &new.spec.template.spec.class);
    check_class_update(before, after, &at, verdict);
    check_network_update(
        before.virtual_network.as_ref(),
        after.virtual_network.as_ref(),
        &at,
        false,
        verdict,
    );
}
