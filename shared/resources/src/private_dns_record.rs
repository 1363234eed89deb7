//! The record set that names the API server in a cluster's private DNS zone
//! (`Microsoft.Network/privateDnsZones/A` and `…/AAAA`, named `apiserver`): the private addresses
//! of the internal API server load balancer's frontends, IPv4 ones in an `A` set and IPv6 ones in
//! an `AAAA` set. Record sets take no tags; the set is the cluster's because its zone is used by
//! the cluster and its name is the one derived, as CAPZ writes it (also in a zone the user
//! brought).

use std::collections::BTreeSet;
use std::net::IpAddr;

use capz_azure::models::id_of;
use capz_azure::models::private_dns::{
    A, ARecord, Aaaa, AaaaRecord, RecordKind, RecordSet, RecordSetProperties,
};
use capz_azure::{IdError, ResourceId};
use capz_kit::conditions::Reason;
use capz_kit::policy::{Category, Classify};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;
use capz_rules::names;

use crate::private_dns_zone::PrivateDnsZone;

/// How long resolvers keep the answer, in seconds (CAPZ's value).
const TTL: i64 = 300;

/// The `apiserver` record set of kind `K` in a zone.
#[derive(Debug, Clone)]
pub struct PrivateDnsRecord<K> {
    id: ResourceId,
    addresses: BTreeSet<IpAddr>,
    kind: std::marker::PhantomData<K>,
}

/// The API server's record sets in a zone.
#[derive(Debug, Clone)]
pub struct ApiServerRecords {
    /// Its IPv4 addresses, when it has any.
    pub a: Option<PrivateDnsRecord<A>>,
    /// Its IPv6 addresses, when it has any.
    pub aaaa: Option<PrivateDnsRecord<Aaaa>>,
}

/// The API server's records in `zone`: an `A` set when its internal frontends have IPv4
/// addresses, an `AAAA` set when they have IPv6 ones.
///
/// # Errors
/// When a frontend's private address is not an IP address.
pub fn api_server_records(
    scope: &ClusterScope,
    zone: &PrivateDnsZone,
) -> Result<ApiServerRecords, RecordError> {
    let mut v4 = BTreeSet::new();
    let mut v6 = BTreeSet::new();
    for address in api_server_addresses(scope)? {
        if address.is_ipv4() {
            v4.insert(address);
        } else {
            v6.insert(address);
        }
    }
    Ok(ApiServerRecords {
        a: PrivateDnsRecord::new(zone, v4)?,
        aaaa: PrivateDnsRecord::new(zone, v6)?,
    })
}

/// Why the API server's records cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A frontend's `privateIP` is not an address.
    #[error(
        "spec.networkSpec.apiServerLB.frontendIPs[].privateIP: Invalid value: {0:?}: not an IP address; give the internal frontend's address, such as 10.0.0.100"
    )]
    Address(String),
    /// The record's id could not be formed.
    #[error(transparent)]
    Id(#[from] IdError),
}

impl Classify for RecordError {
    fn category(&self) -> Category {
        Category::InvalidInput
    }

    fn reason(&self) -> Reason {
        Reason::INVALID_CONFIGURATION
    }
}

/// The private addresses of the API server load balancer's frontends, as the load balancer
/// gives them (a frontend without one has the default internal address).
fn api_server_addresses(scope: &ClusterScope) -> Result<Vec<IpAddr>, RecordError> {
    scope
        .spec
        .network_spec
        .as_ref()
        .and_then(|network| network.api_server_lb.as_ref())
        .and_then(|lb| lb.frontend_ips.as_ref())
        .into_iter()
        .flatten()
        .filter(|frontend| frontend.public_ip.is_none())
        .map(|frontend| {
            let address = frontend
                .private_ip
                .as_deref()
                .filter(|address| !address.is_empty())
                .unwrap_or(capz_rules::azurecluster::DEFAULT_INTERNAL_LB_IP);
            address
                .parse()
                .map_err(|_| RecordError::Address(address.to_owned()))
        })
        .collect()
}

impl<K: RecordKind + Send + Sync + 'static> PrivateDnsRecord<K> {
    fn new(zone: &PrivateDnsZone, addresses: BTreeSet<IpAddr>) -> Result<Option<Self>, IdError> {
        if addresses.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            id: id_of::<RecordSet<K>>(zone.id(), names::API_SERVER_RECORD)?,
            addresses,
            kind: std::marker::PhantomData,
        }))
    }
}

/// The addresses a record set holds, of either kind.
fn held<K>(set: &RecordSet<K>) -> BTreeSet<IpAddr> {
    let Some(properties) = set.properties.as_ref() else {
        return BTreeSet::new();
    };
    let v4 = properties
        .a_records
        .iter()
        .flatten()
        .filter_map(|record| record.ipv4_address.as_deref());
    let v6 = properties
        .aaaa_records
        .iter()
        .flatten()
        .filter_map(|record| record.ipv6_address.as_deref());
    v4.chain(v6).filter_map(|address| address.parse().ok()).collect()
}

impl<K: RecordKind + Send + Sync + 'static> AzureResource for PrivateDnsRecord<K> {
    type Model = RecordSet<K>;
    const SERVICE: &'static str = "privatednsrecords";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::OwnedParent
    }

    fn desired(&self, existing: Option<&RecordSet<K>>) -> Option<RecordSet<K>> {
        if existing.is_some_and(|set| held(set) == self.addresses) {
            return None;
        }
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for address in &self.addresses {
            match address {
                IpAddr::V4(address) => v4.push(ARecord {
                    ipv4_address: Some(address.to_string()),
                }),
                IpAddr::V6(address) => v6.push(AaaaRecord {
                    ipv6_address: Some(address.to_string()),
                }),
            }
        }
        Some(RecordSet {
            properties: Some(RecordSetProperties::new(TTL, v4, v6)),
            ..RecordSet::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_scope;

    fn zone_of(scope: &ClusterScope) -> PrivateDnsZone {
        PrivateDnsZone::new(scope).unwrap().unwrap()
    }

    #[test]
    fn the_default_internal_frontend_is_named_by_an_a_record() {
        let scope = test_scope(&json!({"networkSpec": {"apiServerLB": {"type": "Internal"}}}));
        let zone = zone_of(&scope);
        let records = api_server_records(&scope, &zone).unwrap();
        assert!(records.aaaa.is_none());
        let a = records.a.unwrap();
        assert_eq!(a.id().to_string(), format!("{}/A/apiserver", zone.id()));
        let written = a.desired(None).unwrap();
        assert_eq!(
            serde_json::to_value(&written).unwrap(),
            json!({"properties": {"ttl": 300, "aRecords": [{"ipv4Address": "10.0.0.100"}]}})
        );
        assert_eq!(a.desired(Some(&written)), None);
    }

    #[test]
    fn dual_stack_frontends_get_both_sets_and_a_changed_address_is_written() {
        let scope = test_scope(&json!({"networkSpec": {"apiServerLB": {
            "type": "Internal",
            "frontendIPs": [
                {"name": "v4", "privateIP": "10.0.0.10"},
                {"name": "v6", "privateIP": "fd00::10"},
                {"name": "public", "publicIP": {"name": "pip"}},
            ],
        }}}));
        let zone = zone_of(&scope);
        let ApiServerRecords { a, aaaa } = api_server_records(&scope, &zone).unwrap();
        let aaaa = aaaa.unwrap();
        assert_eq!(aaaa.id().to_string(), format!("{}/AAAA/apiserver", zone.id()));
        let written = aaaa.desired(None).unwrap();
        assert_eq!(
            written.properties.as_ref().unwrap().aaaa_records,
            Some(vec![AaaaRecord {
                ipv6_address: Some("fd00::10".to_owned())
            }])
        );
        let a = a.unwrap();
        let mut moved = a.desired(None).unwrap();
        moved.properties.as_mut().unwrap().a_records = Some(vec![ARecord {
            ipv4_address: Some("10.0.0.11".to_owned()),
        }]);
        assert!(a.desired(Some(&moved)).is_some());
    }

    #[test]
    fn a_frontend_address_that_is_not_one_is_refused_with_the_field() {
        let scope = test_scope(&json!({"networkSpec": {"apiServerLB": {
            "type": "Internal",
            "frontendIPs": [{"name": "v4", "privateIP": "10.0.0.300"}],
        }}}));
        let error = api_server_records(&scope, &zone_of(&scope)).unwrap_err();
        assert!(error.to_string().contains("frontendIPs[].privateIP"), "{error}");
    }
}
