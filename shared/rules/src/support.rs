//! The support matrix: for every spec field of the kinds users write, whether capz-rs acts on it
//! or accepts it without acting on it yet, and why.
//!
//! It is the one source of truth for three readers: the webhooks warn about every not-yet field
//! an object sets ([`warnings`]), the controllers report them on the condition an entry names
//! ([`not_yet_set`]), and `docs/support.md` is generated from it ([`markdown`]). A test walks the
//! CRD schemas in `deploy/crds` and fails when a spec field has no entry.
//!
//! Paths are the CRD's (`spec.networkSpec.vnet.peerings`), with `[]` for the elements of a list
//! and `{}` for the values of a map. An entry covers its field and everything under it, except
//! where a deeper entry says otherwise (so `spec.networkSpec.subnets[].privateEndpoints` can be
//! not yet while the rest of a subnet is acted on). Templates carry the same fields under `spec.template.spec`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::LazyLock;

use capz_api::common::conditions::ConditionType;
use serde_json::Value;

/// The reason every not-yet condition carries.
pub const NOT_SUPPORTED: &str = "NotSupported";

/// A kind the matrix describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `AzureCluster`.
    AzureCluster,
    /// `AzureClusterTemplate`: the AzureCluster fields under `spec.template.spec`.
    AzureClusterTemplate,
    /// `AzureMachine`.
    AzureMachine,
    /// `AzureMachineTemplate`: the AzureMachine fields under `spec.template.spec`.
    AzureMachineTemplate,
    /// `AzureMachinePool`: the scale set, its instances' VM profile under `spec.template`.
    AzureMachinePool,
    /// `AzureClusterIdentity`.
    AzureClusterIdentity,
    /// `AzureManagedControlPlane`: an AKS cluster.
    AzureManagedControlPlane,
    /// `AzureManagedControlPlaneTemplate`: the AzureManagedControlPlane fields a template has,
    /// under `spec.template.spec`.
    AzureManagedControlPlaneTemplate,
    /// `AzureManagedCluster`.
    AzureManagedCluster,
    /// `AzureManagedMachinePool`: an AKS node pool.
    AzureManagedMachinePool,
    /// `AzureManagedMachinePoolTemplate`: the AzureManagedMachinePool fields under
    /// `spec.template.spec`.
    AzureManagedMachinePoolTemplate,
}

impl Kind {
    /// Every kind, in the order the docs list them. (AzureManagedClusterTemplate has no fields.)
    pub const ALL: [Self; 11] = [
        Self::AzureCluster,
        Self::AzureClusterTemplate,
        Self::AzureMachine,
        Self::AzureMachineTemplate,
        Self::AzureMachinePool,
        Self::AzureClusterIdentity,
        Self::AzureManagedControlPlane,
        Self::AzureManagedControlPlaneTemplate,
        Self::AzureManagedCluster,
        Self::AzureManagedMachinePool,
        Self::AzureManagedMachinePoolTemplate,
    ];

    /// The kind called `name`, when the matrix describes it.
    #[must_use]
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The kind's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::AzureCluster => "AzureCluster",
            Self::AzureClusterTemplate => "AzureClusterTemplate",
            Self::AzureMachine => "AzureMachine",
            Self::AzureMachineTemplate => "AzureMachineTemplate",
            Self::AzureMachinePool => "AzureMachinePool",
            Self::AzureClusterIdentity => "AzureClusterIdentity",
            Self::AzureManagedControlPlane => "AzureManagedControlPlane",
            Self::AzureManagedControlPlaneTemplate => "AzureManagedControlPlaneTemplate",
            Self::AzureManagedCluster => "AzureManagedCluster",
            Self::AzureManagedMachinePool => "AzureManagedMachinePool",
            Self::AzureManagedMachinePoolTemplate => "AzureManagedMachinePoolTemplate",
        }
    }

    /// Where the described fields start in an object of the kind.
    #[must_use]
    pub fn spec_root(self) -> &'static str {
        match self {
            Self::AzureClusterTemplate
            | Self::AzureMachineTemplate
            | Self::AzureManagedControlPlaneTemplate
            | Self::AzureManagedMachinePoolTemplate => "spec.template.spec",
            _ => "spec",
        }
    }

    /// The kind whose entries a template reuses; the kind itself otherwise.
    #[must_use]
    pub fn fields_of(self) -> Self {
        match self {
            Self::AzureClusterTemplate => Self::AzureCluster,
            Self::AzureMachineTemplate => Self::AzureMachine,
            Self::AzureManagedControlPlaneTemplate => Self::AzureManagedControlPlane,
            Self::AzureManagedMachinePoolTemplate => Self::AzureManagedMachinePool,
            other => other,
        }
    }

    /// The kind's entries, paths relative to [`Kind::spec_root`].
    #[must_use]
    pub fn entries(self) -> &'static [Entry] {
        match self.fields_of() {
            Self::AzureMachine => &MACHINE,
            Self::AzureMachinePool => &POOL,
            Self::AzureClusterIdentity => &IDENTITY,
            Self::AzureManagedControlPlane => &MANAGED_CONTROL_PLANE,
            Self::AzureManagedCluster => &MANAGED_CLUSTER,
            Self::AzureManagedMachinePool => &MANAGED_POOL,
            _ => &CLUSTER,
        }
    }
}

/// One field (or sub-object) and whether it is acted on.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The path below the spec, such as `networkSpec.vnet.peerings`.
    pub field: String,
    /// Whether capz-rs acts on it.
    pub support: Support,
}

impl Entry {
    /// The full path in an object of `kind`, such as `spec.networkSpec.vnet.peerings`.
    #[must_use]
    pub fn path(&self, kind: Kind) -> String {
        format!("{}.{}", kind.spec_root(), self.field)
    }
}

/// Whether a field is acted on.
#[derive(Clone, Debug, PartialEq)]
pub enum Support {
    /// The controllers build what it says (or the webhooks default from it).
    Acted,
    /// Accepted and stored, not acted on yet.
    NotYet(NotYet),
}

/// A field not acted on yet.
#[derive(Clone, Debug, PartialEq)]
pub struct NotYet {
    /// Which values are not acted on: any, or one (the others are).
    pub when: When,
    /// What a user should know, in a few words.
    pub reason: &'static str,
    /// The condition a controller reports it on, if one does; the webhook warning always does.
    pub condition: Option<ConditionType>,
}

/// Which values of a not-yet field are not acted on.
#[derive(Clone, Debug, PartialEq)]
pub enum When {
    /// Any value: the field is set (present, and not null, an empty list or an empty object).
    Set,
    /// Only this value; other values are acted on.
    Is(Value),
}

impl When {
    fn matches(&self, value: &Value) -> bool {
        match self {
            Self::Set => match value {
                Value::Null => false,
                Value::Array(items) => !items.is_empty(),
                Value::Object(fields) => !fields.is_empty(),
                _ => true,
            },
            Self::Is(only) => value == only,
        }
    }
}

/// A not-yet field an object sets.
#[derive(Clone, Debug, PartialEq)]
pub struct Unacted {
    /// Where, with list indices and map keys: `spec.networkSpec.subnets[1].privateEndpoints`.
    pub path: String,
    /// The value there.
    pub value: Value,
    /// The entry saying it is not acted on.
    pub not_yet: &'static NotYet,
}

impl Unacted {
    /// The admission warning: the field and the reason.
    #[must_use]
    pub fn warning(&self) -> String {
        format!(
            "{}: not acted on by capz-rs yet: {}",
            self.path, self.not_yet.reason
        )
    }
}

/// The not-yet fields `object` (the whole object as JSON) of `kind` sets, in entry order.
#[must_use]
pub fn not_yet_set(kind: Kind, object: &Value) -> Vec<Unacted> {
    let root = kind
        .spec_root()
        .split('.')
        .try_fold(object, |value, key| value.get(key));
    let Some(root) = root else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in kind.entries() {
        let Support::NotYet(not_yet) = &entry.support else {
            continue;
        };
        let segments: Vec<&str> = entry.field.split('.').collect();
        collect(
            root,
            kind.spec_root().to_owned(),
            &segments,
            &mut |path, value| {
                if not_yet.when.matches(value) {
                    found.push(Unacted {
                        path,
                        value: value.clone(),
                        not_yet,
                    });
                }
            },
        );
    }
    found
}

/// Calls `found` with every value at `segments` below `value` (whose path is `path`), expanding
/// `[]` over list elements and `{}` over map values.
fn collect(value: &Value, path: String, segments: &[&str], found: &mut dyn FnMut(String, &Value)) {
    let Some((segment, rest)) = segments.split_first() else {
        found(path, value);
        return;
    };
    let (name, expand) = match segment.strip_suffix("[]").or_else(|| segment.strip_suffix("{}")) {
        Some(name) => (name, true),
        None => (*segment, false),
    };
    let Some(child) = value.get(name) else {
        return;
    };
    let path = format!("{path}.{name}");
    if !expand {
        collect(child, path, rest, found);
        return;
    }
    match child {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                collect(item, format!("{path}[{index}]"), rest, found);
            }
        }
        Value::Object(entries) => {
            for (key, item) in entries {
                collect(item, format!("{path}[{key}]"), rest, found);
            }
        }
        _ => {}
    }
}

/// The admission warnings for `object` of `kind`: one per not-yet field it sets. On an update
/// (`old` given) only the fields that are new or changed: whoever set them heard about them
/// when they did, and repeating every warning on each later change (a label, a finalizer, a
/// re-apply) would bury the news in noise.
#[must_use]
pub fn warnings(kind: Kind, object: &Value, old: Option<&Value>) -> Vec<String> {
    let before: BTreeSet<(String, String)> = old
        .map(|old| {
            not_yet_set(kind, old)
                .into_iter()
                .map(|unacted| (unacted.path, unacted.value.to_string()))
                .collect()
        })
        .unwrap_or_default();
    not_yet_set(kind, object)
        .into_iter()
        .filter(|unacted| !before.contains(&(unacted.path.clone(), unacted.value.to_string())))
        .map(|unacted| unacted.warning())
        .collect()
}

/// The reason of the not-yet entry at `field` (relative to the spec) of `kind`.
#[must_use]
pub fn reason(kind: Kind, field: &str) -> Option<&'static str> {
    kind.entries().iter().find_map(|entry| match &entry.support {
        Support::NotYet(not_yet) if entry.field == field => Some(not_yet.reason),
        _ => None,
    })
}

/// The generated `docs/support.md`.
#[must_use]
pub fn markdown() -> String {
    let mut out = String::from(
        "# Support matrix\n\n\
         <!-- Generated from shared/rules/src/support.rs by `just support-matrix`; do not edit. -->\n\n\
         Every spec field of the kinds below is either **acted on** (the controllers build what it \
         says, or the webhooks default from it) or accepted but **not yet** acted on. capz-rs never \
         ignores a not-yet field silently:\n\n\
         - The validating webhook answers with one warning per not-yet field the object sets, which \
         `kubectl` prints: on create, and on update for the fields that are new or changed (a \
         change elsewhere does not repeat them).\n\
         - Where the table names a condition, the controller reports the field there: False, \
         severity `Warning`, reason `NotSupported`, the message naming each field. On an \
         AzureMachine these conditions do not count in `Ready`: the VM is built without the field. \
         On an AzureCluster they count in `Ready`. AzureMachinePool's not-yet fields are reported \
         by the warning only.\n\
         - Clusters using an AzureClusterIdentity whose type capz-rs cannot sign in with report \
         `UnsupportedIdentityType`.\n\n\
         A field is *set* when it is present and not null, an empty list or an empty object; \
         *when `value`* means only that value is not acted on. An entry covers the fields under it \
         unless a deeper entry says otherwise; `[]` stands for each element of a list, `{}` for \
         each value of a map. The templates (AzureClusterTemplate, AzureMachineTemplate, \
         AzureManagedControlPlaneTemplate, AzureManagedMachinePoolTemplate) carry the same fields \
         under `spec.template.spec` and get the same warnings; the objects cloned from them report \
         the conditions. The AKS kinds' not-yet fields are reported by the warning only.\n",
    );
    for kind in Kind::ALL.into_iter().filter(|kind| kind.fields_of() == *kind) {
        let templates = match kind {
            Kind::AzureCluster => " (and AzureClusterTemplate)",
            Kind::AzureMachine => " (and AzureMachineTemplate)",
            Kind::AzureManagedControlPlane => " (and AzureManagedControlPlaneTemplate)",
            Kind::AzureManagedMachinePool => " (and AzureManagedMachinePoolTemplate)",
            _ => "",
        };
        let _ = write!(
            out,
            "\n## {}{templates}\n\n| Field | Acted on | Reported on |\n|---|---|---|\n",
            kind.name()
        );
        for entry in kind.entries() {
            let (status, reported) = match &entry.support {
                Support::Acted => ("yes".to_owned(), String::new()),
                Support::NotYet(not_yet) => {
                    let only = match &not_yet.when {
                        When::Set => String::new(),
                        When::Is(value) => format!(" when `{value}`"),
                    };
                    let reported = not_yet.condition.as_ref().map_or_else(
                        || "warning".to_owned(),
                        |condition| format!("warning, `{condition}`"),
                    );
                    (format!("not yet{only}: {}", not_yet.reason), reported)
                }
            };
            let _ = writeln!(out, "| `{}` | {status} | {reported} |", entry.path(kind));
        }
    }
    out
}

fn acted(field: &str) -> Entry {
    Entry {
        field: field.to_owned(),
        support: Support::Acted,
    }
}

fn not_yet(field: &str, reason: &'static str, condition: Option<ConditionType>) -> Entry {
    only(field, When::Set, reason, condition)
}

fn only(field: &str, when: When, reason: &'static str, condition: Option<ConditionType>) -> Entry {
    Entry {
        field: field.to_owned(),
        support: Support::NotYet(NotYet {
            when,
            reason,
            condition,
        }),
    }
}

const NO_ID: &str = "capz-rs finds the resource by name and does not record its ID here";
const NO_IP_TAGS: &str = "public IPs are created without IP tags";

/// The entries of a subnet: `field`, and `at` for the path of its fields (`field` or
/// `field[]`).
fn subnet(field: &str, at: &str) -> Vec<Entry> {
    let mut entries = vec![
        acted(field),
        not_yet(&format!("{at}.id"), NO_ID, None),
        not_yet(&format!("{at}.securityGroup.id"), NO_ID, None),
        not_yet(&format!("{at}.routeTable.id"), NO_ID, None),
        not_yet(&format!("{at}.natGateway.id"), NO_ID, None),
        not_yet(
            &format!("{at}.natGateway.ip.dnsName"),
            "NAT gateway IPs get no DNS name",
            None,
        ),
        not_yet(&format!("{at}.natGateway.ip.ipTags"), NO_IP_TAGS, None),
    ];
    // The cluster's subnets get their private endpoints; the bastion's subnet does not, as in CAPZ.
    if at.starts_with("bastionSpec") {
        entries.push(not_yet(
            &format!("{at}.privateEndpoints"),
            "private endpoints are created in the cluster's subnets only",
            None,
        ));
    }
    entries
}

/// The entries of the load balancer at `at`; `outbound` for the outbound ones, whose public IPs
/// get no DNS name.
fn load_balancer(at: &str, outbound: bool) -> Vec<Entry> {
    let mut entries = vec![
        acted(at),
        not_yet(&format!("{at}.id"), NO_ID, None),
        not_yet(
            &format!("{at}.availabilityZones"),
            "load balancer frontends are not pinned to zones",
            None,
        ),
        not_yet(&format!("{at}.frontendIPs[].publicIP.ipTags"), NO_IP_TAGS, None),
    ];
    if outbound {
        entries.push(not_yet(
            &format!("{at}.frontendIPs[].publicIP.dnsName"),
            "outbound public IPs get no DNS name",
            None,
        ));
    }
    entries
}

static CLUSTER: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let mut entries: Vec<Entry> = [
        "subscriptionID",
        "location",
        "resourceGroup",
        "additionalTags",
        "identityRef",
        "azureEnvironment",
        "cloudProviderConfigOverrides",
        "failureDomains",
        "controlPlaneEndpoint",
        "controlPlaneEnabled",
        "bastionSpec",
        "networkSpec.vnet.name",
        "networkSpec.vnet.resourceGroup",
        "networkSpec.vnet.cidrBlocks",
        "networkSpec.vnet.peerings",
        "networkSpec.vnet.tags",
        "networkSpec.additionalAPIServerLBPorts",
        "networkSpec.privateDNSZone",
        "networkSpec.privateDNSZoneName",
        "networkSpec.privateDNSZoneResourceGroup",
    ]
    .iter()
    .map(|field| acted(field))
    .collect();
    entries.extend([
        not_yet(
            "extendedLocation",
            "resources are created in the region itself, not in the extended location",
            None,
        ),
        not_yet(
            "failureDomains{}.attributes",
            "not copied to status.failureDomains",
            None,
        ),
        not_yet("networkSpec.vnet.id", NO_ID, None),
    ]);
    entries.extend(subnet("networkSpec.subnets", "networkSpec.subnets[]"));
    // Under `bastionSpec`, which is acted on: only what a subnet leaves out is listed.
    let bastion_subnet = "bastionSpec.azureBastion.subnet";
    entries.extend(subnet(bastion_subnet, bastion_subnet).into_iter().skip(1));
    entries.extend(load_balancer("networkSpec.apiServerLB", false));
    entries.extend(load_balancer("networkSpec.nodeOutboundLB", true));
    entries.extend(load_balancer("networkSpec.controlPlaneOutboundLB", true));
    entries
});

static MACHINE: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let mut entries: Vec<Entry> = [
        "providerID",
        "vmSize",
        "failureDomain",
        "image",
        "identity",
        "userAssignedIdentities",
        "systemAssignedIdentityRole",
        "roleAssignmentName",
        "osDisk",
        "dataDisks",
        "sshPublicKey",
        "additionalTags",
        "enableIPForwarding",
        "acceleratedNetworking",
        "diagnostics",
        "spotVMOptions",
        "securityProfile",
        "subnetName",
        "dnsServers",
        "networkInterfaces",
        "disableExtensionOperations",
        "vmExtensions",
        "disableVMBootstrapExtension",
    ]
    .iter()
    .map(|field| acted(field))
    .collect();
    let created_without = Some(ConditionType::SPEC_SUPPORTED);
    entries.extend([
        not_yet(
            "osDisk.managedDisk.securityProfile",
            "the VM is created without disk security settings",
            created_without.clone(),
        ),
        not_yet(
            "dataDisks[].managedDisk.securityProfile",
            "the VM is created without disk security settings",
            created_without.clone(),
        ),
        only(
            "allocatePublicIP",
            When::Is(Value::Bool(true)),
            "the VM gets no public IP of its own",
            created_without.clone(),
        ),
        not_yet(
            "capacityReservationGroupID",
            "the VM is created outside any capacity reservation",
            created_without.clone(),
        ),
        not_yet(
            "virtualMachineScaleSetID",
            "the VM is created outside any scale set",
            created_without.clone(),
        ),
        only(
            "additionalCapabilities.ultraSSDEnabled",
            When::Is(Value::Bool(true)),
            "the VM is created without Ultra SSD support",
            created_without,
        ),
    ]);
    entries
});

static POOL: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    // The template's fields are listed one by one: some of them are not acted on yet.
    let mut entries: Vec<Entry> = [
        "location",
        "additionalTags",
        "providerID",
        "providerIDList",
        "identity",
        "userAssignedIdentities",
        "systemAssignedIdentityRole",
        "roleAssignmentName",
        "strategy",
        "orchestrationMode",
        "platformFaultDomainCount",
        "template.vmSize",
        "template.image",
        "template.osDisk",
        "template.dataDisks",
        "template.sshPublicKey",
        "template.subnetName",
        "template.networkInterfaces",
        "template.acceleratedNetworking",
        "template.securityProfile",
        "template.diagnostics",
        "template.spotVMOptions",
        "template.vmExtensions",
        "template.disableVMBootstrapExtension",
    ]
    .iter()
    .map(|field| acted(field))
    .collect();
    entries.extend([
        only(
            "zoneBalance",
            When::Is(Value::Bool(true)),
            "the scale set is created without strict zone balance",
            None,
        ),
        not_yet(
            "template.terminateNotificationTimeout",
            "the scale set gives no notice before it deletes an instance",
            None,
        ),
        only(
            "template.additionalCapabilities.ultraSSDEnabled",
            When::Is(Value::Bool(true)),
            "the instances are created without Ultra SSD support",
            None,
        ),
        not_yet(
            "template.osDisk.managedDisk.securityProfile",
            "the instances are created without disk security settings",
            None,
        ),
        not_yet(
            "template.dataDisks[].managedDisk.securityProfile",
            "the instances are created without disk security settings",
            None,
        ),
    ]);
    entries
});

/// Why the fields that patch the generated AKS objects are not acted on.
const NO_PATCHES: &str = "the AKS objects are sent as built, without merge patches";

static MANAGED_CONTROL_PLANE: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let mut entries: Vec<Entry> = [
        "version",
        "subscriptionID",
        "location",
        "resourceGroupName",
        "nodeResourceGroupName",
        "identityRef",
        "identity",
        "kubeletUserAssignedIdentity",
        "additionalTags",
        "azureEnvironment",
        "controlPlaneEndpoint",
        "sshPublicKey",
        "dnsPrefix",
        "dnsServiceIP",
        "networkPlugin",
        "networkPluginMode",
        "networkPolicy",
        "networkDataplane",
        "outboundType",
        "loadBalancerSKU",
        "loadBalancerProfile",
        "virtualNetwork",
        "aadProfile",
        "disableLocalAccounts",
        "addonProfiles",
        "sku",
        "apiServerAccessProfile",
        "autoscalerProfile",
        "httpProxyConfig",
        "oidcIssuerProfile",
        "autoUpgradeProfile",
        "securityProfile",
    ]
    .iter()
    .map(|field| acted(field))
    .collect();
    entries.extend([
        not_yet(
            "virtualNetwork.subnet.privateEndpoints",
            "no private endpoints are created in the AKS subnet",
            None,
        ),
        not_yet("extensions", "no AKS cluster extensions are installed", None),
        not_yet("fleetsMember", "the cluster does not join a fleet", None),
        not_yet("asoManagedClusterPatches", NO_PATCHES, None),
        only(
            "enablePreviewFeatures",
            When::Is(Value::Bool(true)),
            "the stable AKS API is used; preview-only settings are not sent",
            None,
        ),
        not_yet(
            "machineTemplate",
            "Cluster API's machine template contract of control planes is not read",
            None,
        ),
    ]);
    entries
});

static MANAGED_CLUSTER: LazyLock<Vec<Entry>> = LazyLock::new(|| vec![acted("controlPlaneEndpoint")]);

static MANAGED_POOL: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let mut entries: Vec<Entry> = [
        "name",
        "mode",
        "sku",
        "osType",
        "osDiskSizeGB",
        "osDiskType",
        "availabilityZones",
        "nodeLabels",
        "taints",
        "scaling",
        "maxPods",
        "enableUltraSSD",
        "enableNodePublicIP",
        "nodePublicIPPrefixID",
        "scaleSetPriority",
        "scaleDownMode",
        "spotMaxPrice",
        "kubeletConfig",
        "kubeletDiskType",
        "linuxOSConfig",
        "subnetName",
        "enableFIPS",
        "enableEncryptionAtHost",
        "additionalTags",
        "providerIDList",
    ]
    .iter()
    .map(|field| acted(field))
    .collect();
    entries.push(not_yet("asoManagedClustersAgentPoolPatches", NO_PATCHES, None));
    entries
});

const CREDENTIALS_FILE: &str = "capz-rs cannot sign in with a credentials file yet; use WorkloadIdentity \
                                or UserAssignedMSI";

static IDENTITY: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let mut entries: Vec<Entry> = [
        "clientID",
        "tenantID",
        "clientSecret",
        "certPath",
        "resourceID",
        "allowedNamespaces",
    ]
    .iter()
    .map(|field| acted(field))
    .collect();
    entries.extend([
        only(
            "type",
            When::Is(Value::from("UserAssignedIdentityCredential")),
            CREDENTIALS_FILE,
            None,
        ),
        not_yet("userAssignedIdentityCredentialsPath", CREDENTIALS_FILE, None),
        not_yet("userAssignedIdentityCredentialsCloudType", CREDENTIALS_FILE, None),
    ]);
    entries
});

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn set_fields_are_found_with_their_indices_and_only_values_matter_where_asked() {
        let cluster = json!({"spec": {"networkSpec": {
            "vnet": {"peerings": [{"remoteVnetName": "hub"}]},
            "subnets": [
                {"name": "a", "privateEndpoints": [{"name": "pe"}], "natGateway": {"name": "g", "ip": {"ipTags": []}}},
                {"name": "b", "natGateway": {"name": "g", "ip": {"ipTags": [{"type": "FirstPartyUsage", "tag": "/x"}]}}},
            ],
            "privateDNSZone": "None",
        }}});
        let found: Vec<String> = not_yet_set(Kind::AzureCluster, &cluster)
            .into_iter()
            .map(|unacted| unacted.path)
            .collect();
        assert_eq!(found, ["spec.networkSpec.subnets[1].natGateway.ip.ipTags"]);

        let template = json!({"spec": {"template": {"spec": {
            "allocatePublicIP": false,
            "vmExtensions": [{"name": "x"}],
            "virtualMachineScaleSetID": "/vmss",
            "additionalCapabilities": {"ultraSSDEnabled": true},
        }}}});
        let found: Vec<String> = not_yet_set(Kind::AzureMachineTemplate, &template)
            .iter()
            .map(Unacted::warning)
            .collect();
        assert_eq!(
            found,
            [
                "spec.template.spec.virtualMachineScaleSetID: not acted on by capz-rs yet: the VM is \
                 created outside any scale set",
                "spec.template.spec.additionalCapabilities.ultraSSDEnabled: not acted on by capz-rs yet: \
                 the VM is created without Ultra SSD support",
            ]
        );
        let maps = json!({"spec": {"failureDomains": {"1": {"attributes": {"a": "b"}}, "2": {}}}});
        assert_eq!(
            not_yet_set(Kind::AzureCluster, &maps)[0].path,
            "spec.failureDomains[1].attributes"
        );
        assert!(not_yet_set(Kind::AzureMachine, &json!({"spec": null})).is_empty());

        let pool = json!({"spec": {"zoneBalance": true, "template": {
            "terminateNotificationTimeout": 10,
            "disableVMBootstrapExtension": true,
            "dataDisks": [{"nameSuffix": "a"}, {"nameSuffix": "b", "managedDisk": {"securityProfile": {"securityEncryptionType": "VMGuestStateOnly"}}}],
        }}});
        let found: Vec<String> = not_yet_set(Kind::AzureMachinePool, &pool)
            .into_iter()
            .map(|unacted| unacted.path)
            .collect();
        assert_eq!(
            found,
            [
                "spec.zoneBalance",
                "spec.template.terminateNotificationTimeout",
                "spec.template.dataDisks[1].managedDisk.securityProfile"
            ]
        );
    }

    #[test]
    fn updates_warn_only_about_what_is_new_or_changed() {
        let old = json!({"spec": {"virtualMachineScaleSetID": "/a", "allocatePublicIP": true}});
        let same = warnings(Kind::AzureMachine, &old, Some(&old));
        assert!(same.is_empty(), "{same:?}");
        let new = json!({"spec": {"virtualMachineScaleSetID": "/b", "allocatePublicIP": true,
            "capacityReservationGroupID": "/crg"}});
        let changed = warnings(Kind::AzureMachine, &new, Some(&old));
        let fields: Vec<&str> = changed
            .iter()
            .filter_map(|warning| warning.split(':').next())
            .collect();
        // The scale set changed and the reservation is new; the public IP was asked for before.
        assert_eq!(
            fields,
            ["spec.capacityReservationGroupID", "spec.virtualMachineScaleSetID"]
        );
        assert_eq!(warnings(Kind::AzureMachine, &new, None).len(), 3);
    }

    #[test]
    fn kinds_are_found_by_name() {
        for kind in Kind::ALL {
            assert_eq!(Kind::named(kind.name()), Some(kind));
        }
        assert_eq!(Kind::named("AzureMachinePoolMachine"), None);
        assert_eq!(Kind::named("AzureManagedClusterTemplate"), None);
        assert_eq!(
            reason(Kind::AzureMachine, "capacityReservationGroupID"),
            Some("the VM is created outside any capacity reservation")
        );
    }
}
