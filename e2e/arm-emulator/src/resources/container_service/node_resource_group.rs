//! What AKS builds for a cluster in its node resource group: the group itself (managed by the
//! cluster), the kubelet's user-assigned identity `<cluster>-agentpool`, the network
//! `aks-vnet-<suffix>` (subnet `aks-subnet`) for pools that bring no subnet, the outbound public
//! address, and one scale set per pool, `aks-<pool>-<suffix>-vmss`, whose instances are the
//! nodes (computer names `aks-<pool>-<suffix>-vmss` and six base-36 digits). The suffix is eight
//! digits derived from the cluster's id, the same for all its pools.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::engine::build_companion;
use crate::error::ArmError;
use crate::path::{ResourceId, resource_group_id};
use crate::resources::compute::SCALE_SET;
use crate::resources::identity::USER_ASSIGNED_IDENTITY;
use crate::resources::network::{PUBLIC_IP, VIRTUAL_NETWORK};
use crate::resources::{Prepare, set_provisioning_state};
use crate::state::State;

use super::field;

/// The eight digits AKS appends to what it names in a cluster's node resource group.
pub(super) fn suffix(cluster_key: &str) -> String {
    // FNV-1a: stable across runs, unlike the standard library's hasher.
    let hash = cluster_key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{:08}", hash % 100_000_000)
}

/// `MC_<group>_<cluster>_<location>`, cut to the 80 characters a group name may have.
pub(super) fn default_name(group: &str, cluster: &str, location: &str) -> String {
    let mut name = format!("MC_{group}_{cluster}_{location}");
    name.truncate(80);
    name
}

/// A resource in a node resource group.
fn in_group(subscription: &str, group: &str, namespace: &str, type_name: &str, name: &str) -> ResourceId {
    ResourceId {
        scope: resource_group_id(subscription, group),
        subscription: Some(subscription.to_owned()),
        resource_group: Some(group.to_owned()),
        namespace: namespace.to_owned(),
        types: vec![type_name.to_owned()],
        names: vec![name.to_owned()],
    }
}

/// What a cluster's pools need from its node resource group.
pub(super) struct NodeGroup {
    pub(super) subscription: String,
    pub(super) name: String,
    pub(super) suffix: String,
}

impl NodeGroup {
    /// The node group `name` of the cluster `cluster_id`.
    pub(super) fn new(cluster_id: &str, name: &str) -> Self {
        Self {
            subscription: cluster_id.split('/').nth(2).unwrap_or_default().to_owned(),
            name: name.to_owned(),
            suffix: suffix(&cluster_id.to_ascii_lowercase()),
        }
    }

    /// The node group of a stored cluster document.
    pub(super) fn of(cluster: &Value) -> Option<Self> {
        let id = cluster["id"].as_str()?;
        let name = cluster
            .pointer("/properties/nodeResourceGroup")
            .and_then(Value::as_str)?;
        Some(Self::new(id, name))
    }

    pub(super) fn key(&self) -> String {
        resource_group_id(&self.subscription, &self.name).to_ascii_lowercase()
    }

    fn scale_set_id(&self, pool: &str) -> ResourceId {
        in_group(
            &self.subscription,
            &self.name,
            "Microsoft.Compute",
            "virtualMachineScaleSets",
            &format!("aks-{pool}-{}-vmss", self.suffix),
        )
    }

    /// The subnet of the network AKS made for pools without one.
    pub(super) fn default_subnet(&self) -> String {
        format!(
            "{}/providers/Microsoft.Network/virtualNetworks/aks-vnet-{}/subnets/aks-subnet",
            resource_group_id(&self.subscription, &self.name),
            self.suffix
        )
    }

    /// Builds the group and what the cluster keeps in it, as companions of the cluster's
    /// creation; returns the kubelet's identity and the outbound address, when one is made.
    pub(super) fn create(
        &self,
        prepare: &mut Prepare<'_>,
        cluster: &str,
        network: bool,
        outbound_address: bool,
    ) -> Result<(Value, Option<String>), ArmError> {
        let cluster_id = prepare.id.to_id();
        prepare.companions.push(json!({
            "id": resource_group_id(&self.subscription, &self.name),
            "name": self.name,
            "type": crate::resource_groups::TYPE,
            "location": prepare.location,
            "managedBy": cluster_id,
            "tags": {
                "aks-managed-cluster-name": cluster,
                "aks-managed-cluster-rg": prepare.id.resource_group,
            },
            "properties": { "provisioningState": "Succeeded" },
        }));
        let identity_id = in_group(
            &self.subscription,
            &self.name,
            "Microsoft.ManagedIdentity",
            "userAssignedIdentities",
            &format!("{cluster}-agentpool"),
        );
        let kubelet = Self::identity(prepare, &identity_id)?;
        if network {
            let id = in_group(
                &self.subscription,
                &self.name,
                "Microsoft.Network",
                "virtualNetworks",
                &format!("aks-vnet-{}", self.suffix),
            );
            let body = json!({
                "properties": {
                    "addressSpace": { "addressPrefixes": ["10.224.0.0/12"] },
                    "subnets": [{ "name": "aks-subnet", "properties": { "addressPrefix": "10.224.0.0/16" } }],
                },
            });
            let network = build_companion(prepare, &id, &VIRTUAL_NETWORK, object(body), None)?;
            prepare.companions.push(network);
        }
        let address = if outbound_address {
            let id = in_group(
                &self.subscription,
                &self.name,
                "Microsoft.Network",
                "publicIPAddresses",
                &uuid::Uuid::new_v4().to_string(),
            );
            let body = json!({
                "sku": { "name": "Standard" },
                "properties": { "publicIPAllocationMethod": "Static", "publicIPAddressVersion": "IPv4" },
            });
            let address = build_companion(prepare, &id, &PUBLIC_IP, object(body), None)?;
            prepare.companions.push(address);
            Some(id.to_id())
        } else {
            None
        };
        Ok((kubelet, address))
    }

    /// A user-assigned identity AKS makes in the group (the kubelet's, an add-on's), as the
    /// cluster shows it: its id, client id and object id.
    fn identity(prepare: &mut Prepare<'_>, id: &ResourceId) -> Result<Value, ArmError> {
        let identity = build_companion(prepare, id, &USER_ASSIGNED_IDENTITY, Map::new(), None)?;
        let shown = json!({
            "resourceId": identity["id"],
            "clientId": identity["properties"]["clientId"],
            "objectId": identity["properties"]["principalId"],
        });
        prepare.companions.push(identity);
        Ok(shown)
    }

    /// The identity of an add-on, named `name`.
    pub(super) fn add_on_identity(&self, prepare: &mut Prepare<'_>, name: &str) -> Result<Value, ArmError> {
        let id = in_group(
            &self.subscription,
            &self.name,
            "Microsoft.ManagedIdentity",
            "userAssignedIdentities",
            name,
        );
        Self::identity(prepare, &id)
    }

    /// Builds a pool's scale set (created, or changed to the pool's count, size and version)
    /// as a companion of the pool's write.
    pub(super) fn write_scale_set(
        &self,
        prepare: &mut Prepare<'_>,
        pool: &str,
        properties: &Map<String, Value>,
        access: &Access,
    ) -> Result<(), ArmError> {
        let id = self.scale_set_id(pool);
        let windows = field(properties, "osType").as_str() == Some("Windows");
        let prefix = if windows {
            pool.to_owned()
        } else {
            format!("aks-{pool}-{}-vmss", self.suffix)
        };
        let image = if windows {
            json!({"publisher": "cncf-upstream", "offer": "capi-windows", "sku": "windows-2019-containerd-gen1", "version": "latest"})
        } else {
            json!({"publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy", "sku": "22_04-lts-gen2", "version": "latest"})
        };
        let mut os_profile = json!({ "computerNamePrefix": prefix, "adminUsername": access.admin });
        if windows {
            os_profile["adminPassword"] = json!(access.windows_password.clone().unwrap_or_default());
            os_profile["windowsConfiguration"] = json!({});
        } else {
            os_profile["linuxConfiguration"] = json!({
                "disablePasswordAuthentication": true,
                "ssh": { "publicKeys": access.ssh_keys.iter().map(|key| json!({
                    "path": format!("/home/{}/.ssh/authorized_keys", access.admin),
                    "keyData": key,
                })).collect::<Vec<_>>() },
            });
        }
        let ephemeral = field(properties, "osDiskType").as_str() == Some("Ephemeral");
        let mut os_disk = json!({
            "createOption": "FromImage",
            "caching": "ReadOnly",
            "diskSizeGB": field(properties, "osDiskSizeGB"),
        });
        if ephemeral {
            os_disk["diffDiskSettings"] = json!({ "option": "Local" });
        }
        let subnet = properties
            .get("vnetSubnetID")
            .and_then(Value::as_str)
            .map_or_else(|| self.default_subnet(), str::to_owned);
        let version = field(properties, "currentOrchestratorVersion")
            .as_str()
            .unwrap_or_default();
        let node_image = field(properties, "nodeImageVersion").as_str().unwrap_or_default();
        // What the nodes boot with: a new version or node image is a new instance model, which
        // the instances take at once.
        let boot = base64::engine::general_purpose::STANDARD
            .encode(format!("kubernetes={version}\nnodeImage={node_image}\n"));
        let mut model = json!({
            "osProfile": os_profile,
            "storageProfile": { "imageReference": image, "osDisk": os_disk },
            "networkProfile": { "networkInterfaceConfigurations": [{
                "name": id.name(),
                "properties": {
                    "primary": true,
                    "enableIPForwarding": true,
                    "ipConfigurations": [{ "name": "ipconfig1", "properties": { "primary": true, "subnet": { "id": subnet } } }],
                },
            }] },
            "userData": boot,
        });
        if field(properties, "scaleSetPriority").as_str() == Some("Spot") {
            model["priority"] = json!("Spot");
            model["evictionPolicy"] = properties
                .get("scaleSetEvictionPolicy")
                .cloned()
                .unwrap_or_else(|| json!("Delete"));
            model["billingProfile"] =
                json!({ "maxPrice": properties.get("spotMaxPrice").cloned().unwrap_or(json!(-1)) });
        }
        let mut tags = properties
            .get("tags")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        tags.insert("aks-managed-poolName".into(), json!(pool));
        tags.insert(
            "aks-managed-orchestrator".into(),
            json!(format!("Kubernetes:{version}")),
        );
        tags.insert("aks-managed-resourceNameSuffix".into(), json!(self.suffix));
        let mut body = json!({
            "sku": { "name": field(properties, "vmSize"), "capacity": field(properties, "count") },
            "tags": tags,
            "properties": {
                "orchestrationMode": "Uniform",
                "upgradePolicy": { "mode": "Automatic" },
                "overprovision": false,
                "singlePlacementGroup": false,
                "virtualMachineProfile": model,
            },
        });
        if let Some(zones) = properties.get("availabilityZones") {
            body["zones"] = zones.clone();
        }
        let in_progress = if prepare.state.body(&id.key()).is_some() {
            "Updating"
        } else {
            "Creating"
        };
        let set = build_companion(prepare, &id, &SCALE_SET, object(body), Some(in_progress))?;
        prepare.companions.push(set);
        Ok(())
    }

    /// A pool's scale set settles with the pool's operation.
    pub(super) fn settle_scale_set(&self, state: &mut State, pool: &str, succeeded: bool) {
        let key = self.scale_set_id(pool).key();
        state.change_doc(&key, |set| {
            set_provisioning_state(set, if succeeded { "Succeeded" } else { "Failed" }, false);
        });
        if let Some(settle) = SCALE_SET.hooks.on_settled {
            settle(state, &key, succeeded);
        }
    }

    /// A deleted pool takes its scale set along.
    pub(super) fn remove_scale_set(&self, state: &mut State, pool: &str) {
        state.remove_resource(&self.scale_set_id(pool).key());
    }

    /// A deleted cluster takes its node resource group along.
    pub(super) fn remove(&self, state: &mut State) {
        crate::resource_groups::remove(state, &self.key());
    }
}

/// How the nodes are signed in to: the cluster's Linux and Windows profiles.
pub(super) struct Access {
    pub(super) admin: String,
    pub(super) ssh_keys: Vec<Value>,
    pub(super) windows_password: Option<String>,
}

impl Access {
    pub(super) fn of(cluster_properties: &Map<String, Value>, windows: bool) -> Self {
        let linux = cluster_properties.get("linuxProfile");
        let windows_profile = cluster_properties.get("windowsProfile");
        let admin = if windows {
            windows_profile.and_then(|profile| profile["adminUsername"].as_str())
        } else {
            linux.and_then(|profile| profile["adminUsername"].as_str())
        };
        Self {
            admin: admin.unwrap_or("azureuser").to_owned(),
            ssh_keys: linux
                .and_then(|profile| profile.pointer("/ssh/publicKeys"))
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(|key| key.get("keyData").cloned())
                        .collect()
                })
                .unwrap_or_default(),
            windows_password: windows_profile
                .and_then(|profile| profile["adminPassword"].as_str())
                .map(str::to_owned),
        }
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
