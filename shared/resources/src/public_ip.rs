//! Public IP addresses (`Microsoft.Network/publicIPAddresses`): of the API server load balancer,
//! of outbound load balancers and of NAT gateways. Always Standard SKU and static, as load
//! balancers and NAT gateways of the Standard SKU require.

use capz_azure::models::Sku;
use capz_azure::models::network::IpAllocationMethod;
use capz_azure::models::network::{
    IpVersion, PublicIpAddress, PublicIpAddressDnsSettings, PublicIpAddressProperties, PublicIpSkuName,
};
use capz_azure::{IdError, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;
use capz_kit::tags::{Role, Tags};
use std::marker::PhantomData;

/// A public IP address the cluster owns.
#[derive(Debug, Clone)]
pub struct PublicIp {
    id: ResourceId,
    cluster: String,
    location: capz_azure::Location,
    tags: Tags,
    dns_label: Option<String>,
    ipv6: bool,
    zones: Option<Vec<String>>,
}

impl PublicIp {
    /// The address `name` in the cluster's resource group, tagged with `role`. `dns_label` gives
    /// it a DNS name (`<label>.<region>.cloudapp.azure.com`).
    ///
    /// # Errors
    /// When `name` is not a valid resource name.
    pub fn new(
        scope: &ClusterScope,
        name: &str,
        role: Role,
        dns_label: Option<&str>,
    ) -> Result<Self, IdError> {
        Ok(Self {
            id: scope.id_of::<PublicIpAddress>(name)?,
            cluster: scope.name.clone(),
            location: scope.location.clone(),
            tags: scope.owned_tags(role),
            dns_label: dns_label.map(str::to_owned),
            ipv6: false,
            zones: None,
        })
    }

    /// An IPv6 address instead of an IPv4 one.
    #[must_use]
    pub fn ipv6(mut self) -> Self {
        self.ipv6 = true;
        self
    }

    /// Served from these availability zones (zone-redundant when all of the region's). Fixed
    /// once the address exists.
    #[must_use]
    pub fn zones(mut self, zones: Vec<String>) -> Self {
        self.zones = (!zones.is_empty()).then_some(zones);
        self
    }

    fn version(&self) -> IpVersion {
        if self.ipv6 {
            IpVersion::Ipv6
        } else {
            IpVersion::Ipv4
        }
    }
}

impl AzureResource for PublicIp {
    type Model = PublicIpAddress;
    const SERVICE: &'static str = "publicips";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&PublicIpAddress>) -> Option<PublicIpAddress> {
        if let Some(existing) = existing {
            // Allocation, version, SKU and zones cannot change on an existing address; the tags and
            // the DNS label can.
            let label = existing
                .properties
                .as_ref()
                .and_then(|properties| properties.dns_settings.as_ref())
                .and_then(|dns| dns.domain_name_label.as_deref());
            let tags_match = existing.tags.as_ref() == Some(&self.tags);
            if tags_match && label == self.dns_label.as_deref() {
                return None;
            }
        }
        Some(PublicIpAddress {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            sku: Some(Sku {
                name: Some(PublicIpSkuName::Standard),
                tier: None,
            }),
            zones: self.zones.clone(),
            properties: Some(PublicIpAddressProperties {
                public_ip_allocation_method: Some(IpAllocationMethod::Static),
                public_ip_address_version: Some(self.version()),
                dns_settings: self.dns_label.as_ref().map(|label| PublicIpAddressDnsSettings {
                    domain_name_label: Some(label.clone()),
                    fqdn: None,
                }),
                ..PublicIpAddressProperties::default()
            }),
            ..PublicIpAddress::default()
        })
    }
}

/// The resource a [`PublicIpFor`] serves, which names the service its operations are recorded
/// under.
pub trait AddressOf {
    /// The service of the address's operations.
    const IP_SERVICE: &'static str;
}

/// The public IP of a resource another controller than the load balancers' reconciles (a NAT
/// gateway, a bastion host): a [`PublicIp`] whose operations are recorded under a service of
/// their own, so that they never mix with the load balancers' addresses.
#[derive(Debug, Clone)]
pub struct PublicIpFor<Of> {
    ip: PublicIp,
    of: PhantomData<fn() -> Of>,
}

impl<Of> PublicIpFor<Of> {
    /// `ip`, serving an `Of`.
    #[must_use]
    pub fn new(ip: PublicIp) -> Self {
        Self { ip, of: PhantomData }
    }
}

impl<Of: AddressOf> AzureResource for PublicIpFor<Of> {
    type Model = PublicIpAddress;
    const SERVICE: &'static str = Of::IP_SERVICE;

    fn id(&self) -> &ResourceId {
        self.ip.id()
    }

    fn ownership(&self) -> Ownership {
        self.ip.ownership()
    }

    fn desired(&self, existing: Option<&PublicIpAddress>) -> Option<PublicIpAddress> {
        self.ip.desired(existing)
    }
}

#[cfg(test)]
mod tests {
    use capz_rules::Features;

    use super::*;

    fn scope() -> ClusterScope {
        let cluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"location": "westeurope", "subscriptionID": "00000000-0000-0000-0000-000000000001"},
        }))
        .unwrap();
        ClusterScope::new(&cluster, Features::default(), None).unwrap()
    }

    #[test]
    fn a_new_address_is_static_standard_and_tagged() {
        let ip = PublicIp::new(&scope(), "pip-c1-apiserver", Role::ApiServer, Some("c1-abc")).unwrap();
        let body = ip.desired(None).unwrap();
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["sku"]["name"], "Standard");
        assert_eq!(json["properties"]["publicIPAllocationMethod"], "Static");
        assert_eq!(json["properties"]["publicIPAddressVersion"], "IPv4");
        assert_eq!(json["properties"]["dnsSettings"]["domainNameLabel"], "c1-abc");
        assert_eq!(
            json["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "apiserver"
        );
        assert!(json.get("id").is_none(), "no read-only field is sent: {json}");
    }

    #[test]
    fn an_address_as_wanted_is_not_written_and_a_changed_label_is() {
        let ip = PublicIp::new(&scope(), "pip-c1-apiserver", Role::ApiServer, Some("c1-abc")).unwrap();
        let mut existing = ip.desired(None).unwrap();
        existing.properties.as_mut().unwrap().ip_address = Some("20.1.2.3".into());
        assert_eq!(ip.desired(Some(&existing)), None);
        let relabelled = PublicIp::new(&scope(), "pip-c1-apiserver", Role::ApiServer, Some("other")).unwrap();
        assert!(relabelled.desired(Some(&existing)).is_some());
    }
}
