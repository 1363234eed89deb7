//! Private DNS (`Microsoft.Network/privateDnsZones`): a zone, its links to virtual networks (a
//! network resolves the zone's names only while linked), and its A and AAAA record sets.
//!
//! Private DNS is a provider of its own inside Microsoft.Network, with its own api-versions; zones
//! and links are global (`location: "global"`) and written as long-running operations, record
//! sets at once and without tags.

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use super::{ArmModel, ChildResource, ProvisioningState, SubResource, TrackedResource};
use crate::id::ApiVersion;

/// The api-version of every private DNS model.
pub const API_VERSION: ApiVersion = ApiVersion::new("2024-06-01");

/// A private DNS zone (`Microsoft.Network/privateDnsZones`).
pub type PrivateZone = TrackedResource<PrivateZoneProperties>;

/// What Azure reports of a zone; a zone has nothing to set beyond its name and tags.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrivateZoneProperties {
    /// How many record sets it holds, its SOA record included (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_of_record_sets: Option<i64>,
    /// How many virtual networks it is linked to (read-only). Azure refuses to delete a zone
    /// that still has links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_of_virtual_network_links: Option<i64>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// A zone's link to a virtual network (`Microsoft.Network/privateDnsZones/virtualNetworkLinks`).
/// Unlike most children it is tracked: it has a location (`global`) and tags of its own.
pub type VirtualNetworkLink = TrackedResource<VirtualNetworkLinkProperties>;

/// Which network a link joins to its zone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualNetworkLinkProperties {
    /// The linked network; it may be in any resource group or subscription.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_network: Option<SubResource>,
    /// Whether the network's VMs register their own names in the zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration_enabled: Option<bool>,
    /// Whether the link is in effect yet (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_network_link_state: Option<VirtualNetworkLinkState>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

lenient_enum! {
    /// Whether a link resolves yet.
    pub enum VirtualNetworkLinkState {
        /// The network resolves the zone's names.
        Completed = "Completed",
        /// Still being set up.
        InProgress = "InProgress",
    }
}

/// The kind of a record set: it fixes the resource type, and with it the id's segment.
pub trait RecordKind: Clone + Default + PartialEq + std::fmt::Debug {
    /// The record set's full resource type.
    const RESOURCE_TYPE: &'static str;
}

/// IPv4 addresses (`A`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct A;

impl RecordKind for A {
    const RESOURCE_TYPE: &'static str = "Microsoft.Network/privateDnsZones/A";
}

/// IPv6 addresses (`AAAA`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aaaa;

impl RecordKind for Aaaa {
    const RESOURCE_TYPE: &'static str = "Microsoft.Network/privateDnsZones/AAAA";
}

/// A record set of kind `K` in a zone (`Microsoft.Network/privateDnsZones/<kind>`).
pub type RecordSet<K> = ChildResource<RecordSetProperties<K>>;

/// The records of a set, and how long resolvers keep them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordSetProperties<K> {
    /// Seconds a resolver may keep the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// The IPv4 addresses of an `A` set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_records: Option<Vec<ARecord>>,
    /// The IPv6 addresses of an `AAAA` set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aaaa_records: Option<Vec<AaaaRecord>>,
    /// The set's full name, with a trailing dot (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    #[serde(skip)]
    kind: PhantomData<K>,
}

impl<K> RecordSetProperties<K> {
    /// A set of the records given, kept `ttl` seconds.
    #[must_use]
    pub fn new(ttl: i64, a_records: Vec<ARecord>, aaaa_records: Vec<AaaaRecord>) -> Self {
        Self {
            ttl: Some(ttl),
            a_records: (!a_records.is_empty()).then_some(a_records),
            aaaa_records: (!aaaa_records.is_empty()).then_some(aaaa_records),
            fqdn: None,
            kind: PhantomData,
        }
    }
}

/// One IPv4 address of an `A` set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ARecord {
    /// The address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_address: Option<String>,
}

/// One IPv6 address of an `AAAA` set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AaaaRecord {
    /// The address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_address: Option<String>,
}

arm_model!(
    PrivateZone,
    "Microsoft.Network/privateDnsZones",
    API_VERSION,
    tagged
);

arm_model!(
    VirtualNetworkLink,
    "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
    API_VERSION,
    tagged
);

impl<K: RecordKind + Send + Sync + 'static> ArmModel for RecordSet<K> {
    const RESOURCE_TYPE: &'static str = K::RESOURCE_TYPE;
    const API_VERSION: ApiVersion = API_VERSION;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::models::id_of;

    const ZONE: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/privateDnsZones/c1.capz.io";
    const NETWORK: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/c1-vnet";

    #[test]
    fn a_zone_and_a_link_are_read_as_azure_answers_them() {
        let zone = json!({
            "id": ZONE,
            "name": "c1.capz.io",
            "type": "Microsoft.Network/privateDnsZones",
            "etag": "c7f0e894-ca3b-480a-990f-e06ae30a5f3c",
            "location": "global",
            "tags": {"sigs.k8s.io_cluster-api-provider-azure_cluster_c1": "owned"},
            "properties": {
                "internalId": "SW1tdXRhYmxl",
                "maxNumberOfRecordSets": 25000,
                "numberOfRecordSets": 1,
                "numberOfVirtualNetworkLinks": 0,
                "provisioningState": "Succeeded"
            }
        });
        let read: PrivateZone = serde_json::from_value(zone.clone()).unwrap();
        crate::models::tests::assert_written_back(&zone, &read);
        assert_eq!(
            read.location.as_ref().map(ToString::to_string).as_deref(),
            Some("global")
        );
        assert_eq!(read.properties.unwrap().number_of_virtual_network_links, Some(0));

        let link = json!({
            "id": format!("{ZONE}/virtualNetworkLinks/c1-vnet-link"),
            "name": "c1-vnet-link",
            "type": "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
            "etag": "\"2a05a971-0000-0100-0000-672e85300000\"",
            "location": "global",
            "properties": {
                "provisioningState": "Succeeded",
                "registrationEnabled": false,
                "virtualNetwork": {"id": NETWORK},
                "virtualNetworkLinkState": "Completed"
            }
        });
        let read: VirtualNetworkLink = serde_json::from_value(link.clone()).unwrap();
        crate::models::tests::assert_written_back(&link, &read);
        let properties = read.properties.unwrap();
        assert_eq!(
            properties.virtual_network_link_state,
            Some(VirtualNetworkLinkState::Completed)
        );
        assert_eq!(properties.virtual_network.unwrap().id, NETWORK.parse().unwrap());
    }

    #[test]
    fn a_record_set_has_its_kind_in_its_id() {
        let zone = ZONE.parse().unwrap();
        let a = id_of::<RecordSet<A>>(&zone, "apiserver").unwrap();
        assert_eq!(a.to_string(), format!("{ZONE}/A/apiserver"));
        let aaaa = id_of::<RecordSet<Aaaa>>(&zone, "apiserver").unwrap();
        assert_eq!(aaaa.to_string(), format!("{ZONE}/AAAA/apiserver"));

        let set = RecordSet::<A> {
            properties: Some(RecordSetProperties::new(
                300,
                vec![ARecord {
                    ipv4_address: Some("10.0.0.100".to_owned()),
                }],
                Vec::new(),
            )),
            ..RecordSet::default()
        };
        assert_eq!(
            serde_json::to_value(&set).unwrap(),
            json!({"properties": {
                "ttl": 300,
                "aRecords": [{"ipv4Address": "10.0.0.100"}]
            }})
        );

        let answer = json!({
            "id": format!("{ZONE}/A/apiserver"),
            "name": "apiserver",
            "type": "Microsoft.Network/privateDnsZones/A",
            "etag": "1c302d32-9cfa-4a60-8015-11166fa1e89c",
            "properties": {
                "fqdn": "apiserver.c1.capz.io.",
                "ttl": 300,
                "aRecords": [{"ipv4Address": "10.0.0.100"}],
                "isAutoRegistered": false
            }
        });
        let read: RecordSet<A> = serde_json::from_value(answer).unwrap();
        assert_eq!(
            read.properties.unwrap().fqdn.as_deref(),
            Some("apiserver.c1.capz.io.")
        );
    }
}
