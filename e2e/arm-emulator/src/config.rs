//! How the emulator behaves and what it knows at start: tenants, subscriptions, principals, managed
//! identities, locations, quotas, latencies and seeded resources. Read from a YAML (or JSON) file
//! by the binary; built in code by tests. Every field has a default, so an empty file is valid.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The all-zero GUID the recorded Azure sessions use for their tenant and subscription.
pub const DEFAULT_TENANT: &str = "00000000-0000-0000-0000-000000000000";
/// The subscription of the default configuration.
pub const DEFAULT_SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000000";
/// The client id of the default configuration's one principal.
pub const DEFAULT_CLIENT_ID: &str = "11111111-1111-1111-1111-111111111111";
/// The client secret of the default configuration's one principal.
pub const DEFAULT_CLIENT_SECRET: &str = "emulator-client-secret";

/// The emulator's configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// How long a long-running operation stays in progress unless `latencies` names its resource
    /// type. Zero (the default) finishes it by the next request, which is what unit tests want.
    #[serde(deserialize_with = "duration")]
    pub operation_latency: Duration,
    /// Operation latency per resource type (`Microsoft.Compute/virtualMachines: 20s`).
    #[serde(deserialize_with = "durations")]
    pub latencies: BTreeMap<String, Duration>,
    /// The `Retry-After` (seconds) sent with accepted operations.
    pub retry_after_seconds: u64,
    /// How many items a list answers with before it adds a `nextLink`.
    pub page_size: usize,
    /// How many of the last requests the request log keeps (older ones only in the counts).
    pub request_log_size: usize,
    /// Microsoft Entra tenants.
    pub tenants: Vec<Tenant>,
    /// Subscriptions, each in a tenant.
    pub subscriptions: Vec<Subscription>,
    /// Service principals (app registrations) that can get tokens.
    pub principals: Vec<Principal>,
    /// Managed identities the IMDS endpoint hands out tokens for.
    pub managed_identities: Vec<ManagedIdentity>,
    /// Locations (regions) resources can be created in, with their zones.
    pub locations: Vec<Location>,
    /// Regional vCPU quotas per VM family; families not listed are unlimited.
    pub quotas: Vec<Quota>,
    /// VM sizes the subscriptions may not use in a location, or in some of its zones, as resource
    /// SKUs list them; creating a machine there fails with `SkuNotAvailable`.
    pub sku_restrictions: Vec<SkuRestriction>,
    /// How many machines of a size a location (or one of its zones) has room for; past it,
    /// creating a machine or scaling a scale set out there fails as Azure fails when a zone is
    /// out of capacity (`ZonalAllocationFailed`, `AllocationFailed`).
    pub capacity: Vec<CapacityLimit>,
    /// How long access tokens from the token endpoint live, in seconds (Entra answers 3599);
    /// shorter lets a test see a client renew its tokens.
    pub token_lifetime_seconds: i64,
    /// AKS add-ons (`azurepolicy`, `omsagent`, ...) that policies of the subscriptions deploy on
    /// every managed cluster, as Azure Policy's `deployIfNotExists` assignments do: enabled, with
    /// an identity in the node resource group, whatever the cluster's writer asked for.
    pub policy_add_ons: Vec<String>,
    /// The range static public IP addresses are allocated from.
    pub public_ip_pool: String,
    /// Request limits per principal (token buckets for reads, writes and deletes).
    pub rate_limits: crate::throttle::RateLimits,
    /// PEM CA certificates trusted when fetching a federated issuer's documents over HTTPS (for
    /// the federated credentials of identities made through ARM): what the public roots are to
    /// Entra, for issuers no public CA certifies.
    pub issuer_cas: Vec<String>,
    /// Issuers whose signing keys are known without fetching them (issuers that serve their
    /// documents only to authenticated clients), for the credentials of identities made through
    /// ARM.
    pub issuers: Vec<KnownIssuer>,
    /// When on, every ARM call needs a role assignment granting the caller the scope (403
    /// `AuthorizationFailed` otherwise).
    pub rbac: bool,
    /// Resources present at start (seeded), for example an existing virtual network to bring.
    pub resources: Vec<SeedResource>,
    /// The virtual network (an id) the proxy's clients sit in, as a management cluster running in
    /// Azure does. Unset, they stand outside every network: they reach every load balancer's
    /// private frontend and resolve no private DNS zone. Set, they resolve a private zone's names
    /// only while the zone is linked to this network, reach a private address only in it or in a
    /// network peered with it both ways, and lose an open tunnel when its host stops doing both.
    pub management_network: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            operation_latency: Duration::ZERO,
            latencies: BTreeMap::new(),
            retry_after_seconds: 15,
            token_lifetime_seconds: 3599,
            page_size: 100,
            request_log_size: 1000,
            tenants: vec![Tenant {
                id: DEFAULT_TENANT.into(),
            }],
            subscriptions: vec![Subscription {
                id: DEFAULT_SUBSCRIPTION.into(),
                tenant: DEFAULT_TENANT.into(),
                display_name: "Emulated subscription".into(),
            }],
            principals: vec![Principal {
                client_id: DEFAULT_CLIENT_ID.into(),
                tenant: DEFAULT_TENANT.into(),
                object_id: None,
                secret: Some(DEFAULT_CLIENT_SECRET.into()),
                certificate: None,
                federated: Vec::new(),
            }],
            managed_identities: Vec::new(),
            locations: default_locations(),
            quotas: Vec::new(),
            sku_restrictions: Vec::new(),
            capacity: Vec::new(),
            policy_add_ons: Vec::new(),
            issuer_cas: Vec::new(),
            issuers: Vec::new(),
            public_ip_pool: "20.0.0.0/12".into(),
            rate_limits: crate::throttle::RateLimits::default(),
            rbac: false,
            resources: Vec::new(),
            management_network: None,
        }
    }
}

impl Config {
    /// Reads a configuration file (YAML, of which JSON is a subset).
    ///
    /// # Errors
    /// Names the file and what in it is wrong.
    pub fn from_yaml(text: &str) -> Result<Self, serde_saphyr::Error> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_saphyr::from_str(text)
    }

    /// The latency of operations on a resource type.
    #[must_use]
    pub fn latency(&self, resource_type: &str) -> Duration {
        self.latencies
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(resource_type))
            .map_or(self.operation_latency, |(_, latency)| *latency)
    }

    /// The tenant a configured subscription belongs to.
    pub(crate) fn subscription_tenant(&self, subscription: &str) -> Option<&str> {
        self.subscriptions
            .iter()
            .find(|known| known.id.eq_ignore_ascii_case(subscription))
            .map(|known| known.tenant.as_str())
    }
}

/// A Microsoft Entra tenant.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tenant {
    /// The tenant id (a GUID).
    pub id: String,
}

/// A subscription.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Subscription {
    /// The subscription id (a GUID).
    pub id: String,
    /// The tenant it belongs to.
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// Its display name.
    #[serde(default)]
    pub display_name: String,
}

/// A service principal that authenticates with a secret, a certificate or a federated token.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Principal {
    /// The application (client) id.
    pub client_id: String,
    /// The tenant it signs in to.
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// Its object id, the `principalId` of role assignments; derived from the client id when
    /// absent.
    #[serde(default)]
    pub object_id: Option<String>,
    /// A client secret it may present.
    #[serde(default)]
    pub secret: Option<String>,
    /// A PEM certificate whose key signs the client assertions it may present.
    #[serde(default)]
    pub certificate: Option<String>,
    /// Issuers whose tokens it may exchange (workload identity).
    #[serde(default)]
    pub federated: Vec<FederatedCredential>,
}

impl Principal {
    /// Its object id: the configured one, else one derived from the client id.
    #[must_use]
    pub fn object_id(&self) -> String {
        self.object_id
            .clone()
            .unwrap_or_else(|| derived_object_id(&self.client_id))
    }
}

/// The namespace of the name-based UUIDs derived from client ids.
const OBJECT_ID_NAMESPACE: uuid::Uuid = uuid::uuid!("6c1f8e0a-3d2b-4b7e-9a51-0e4c2f7d9b13");

/// The object id of a client id that has none configured: the version 5 UUID of the lower-cased
/// client id in the emulator's namespace (SHA-1 of namespace and name, as RFC 9562 defines it).
/// The same client id always gets the same object id, and it differs from the client id as in
/// Microsoft Entra.
#[must_use]
pub fn derived_object_id(client_id: &str) -> String {
    let mut input = OBJECT_ID_NAMESPACE.as_bytes().to_vec();
    input.extend(client_id.to_ascii_lowercase().bytes());
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    let mut bytes = [0; 16];
    bytes.copy_from_slice(digest.as_ref().get(..16).unwrap_or(&[0; 16]));
    uuid::Builder::from_sha1_bytes(bytes).into_uuid().to_string()
}

/// Trust in tokens of an external issuer, as a federated identity credential grants it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FederatedCredential {
    /// The issuer (`iss`); its OIDC discovery document is fetched from
    /// `{issuer}/.well-known/openid-configuration` unless `jwks` is given.
    pub issuer: String,
    /// The subject (`sub`), for example `system:serviceaccount:capz-system:capz-manager`.
    pub subject: String,
    /// The audience (`aud`) the token must carry.
    #[serde(default = "default_federated_audience")]
    pub audience: String,
    /// The issuer's signing keys as a JWKS document, instead of fetching them.
    #[serde(default)]
    pub jwks: Option<Value>,
    /// A PEM CA certificate to trust when fetching the issuer's documents over HTTPS.
    #[serde(default)]
    pub ca: Option<String>,
}

/// An issuer and its signing keys.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KnownIssuer {
    /// The issuer URL (`iss`), as tokens name it.
    pub issuer: String,
    /// Its signing keys, as a JWKS document.
    pub jwks: Value,
}

/// A managed identity the IMDS endpoint can issue tokens for.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedIdentity {
    /// Its client id.
    pub client_id: String,
    /// Its object (principal) id; derived from the client id when absent.
    #[serde(default)]
    pub object_id: Option<String>,
    /// The ARM id of the user-assigned identity; absent for the system-assigned identity of the
    /// machine the emulator plays.
    #[serde(default)]
    pub resource_id: Option<String>,
    /// Its tenant.
    #[serde(default = "default_tenant")]
    pub tenant: String,
}

impl ManagedIdentity {
    /// Its object id: the configured one, else one derived from the client id.
    #[must_use]
    pub fn object_id(&self) -> String {
        self.object_id
            .clone()
            .unwrap_or_else(|| derived_object_id(&self.client_id))
    }
}

/// A location (region).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Location {
    /// Its name, for example `westeurope`.
    pub name: String,
    /// Its availability zones, for example `["1", "2", "3"]`; empty when it has none.
    #[serde(default)]
    pub zones: Vec<String>,
}

/// A regional vCPU quota for a VM family.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Quota {
    /// The location it applies to.
    pub location: String,
    /// The VM family, as resource SKUs name it (`standardDSv3Family`).
    pub family: String,
    /// How many vCPUs of the family may run in the location.
    pub cores: u32,
}

/// A VM size the subscriptions may not use (reason `NotAvailableForSubscription`): in a whole
/// location, or only in some of its zones.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkuRestriction {
    /// The VM size, for example `Standard_D8s_v3`.
    pub size: String,
    /// The location it applies to.
    pub location: String,
    /// The zones of the location the size is restricted in; empty (the default) restricts it in
    /// the whole location.
    #[serde(default)]
    pub zones: Vec<String>,
}

impl SkuRestriction {
    /// Whether it names this size in this location (any case).
    #[must_use]
    pub fn applies_to(&self, size: &str, location: &str) -> bool {
        self.size.eq_ignore_ascii_case(size) && self.location.eq_ignore_ascii_case(location)
    }
}

/// Room for machines of a size in a location, or in one zone of it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityLimit {
    /// The location it applies to.
    pub location: String,
    /// The zone it applies to; none (the default) means the location's machines outside zones.
    #[serde(default)]
    pub zone: Option<String>,
    /// The VM size it applies to; none (the default) means every size.
    #[serde(default)]
    pub size: Option<String>,
    /// How many machines fit: virtual machines and scale set instances together.
    pub machines: u32,
}

/// A resource present at start.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeedResource {
    /// Its ARM id.
    pub id: String,
    /// Its body, as a PUT would send it.
    #[serde(default)]
    pub body: Value,
}

fn default_tenant() -> String {
    DEFAULT_TENANT.into()
}

fn default_federated_audience() -> String {
    "api://AzureADTokenExchange".into()
}

fn default_locations() -> Vec<Location> {
    let zoned = [
        "eastus",
        "eastus2",
        "westus2",
        "westus3",
        "westeurope",
        "northeurope",
        "uksouth",
    ];
    let unzoned = ["westus", "centralus", "westcentralus", "northcentralus"];
    zoned
        .iter()
        .map(|name| Location {
            name: (*name).into(),
            zones: vec!["1".into(), "2".into(), "3".into()],
        })
        .chain(unzoned.iter().map(|name| Location {
            name: (*name).into(),
            zones: Vec::new(),
        }))
        .collect()
}

/// Parses `250ms`, `2s`, `1.5s` or `3m`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration such as 250ms, 2s or 1m"))?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "s" | "" => number,
        "m" => number * 60.0,
        other => return Err(format!("'{other}' is not a duration unit (ms, s or m)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|err| format!("'{text}': {err}"))
}

fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

fn durations<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, Duration>, D::Error> {
    BTreeMap::<String, String>::deserialize(deserializer)?
        .into_iter()
        .map(|(name, text)| Ok((name, parse_duration(&text).map_err(serde::de::Error::custom)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Config, parse_duration};

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_mins(2)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("3h").is_err());
    }

    #[test]
    fn a_file_overrides_what_it_names_and_keeps_the_other_defaults() {
        let config = Config::from_yaml(
            "operationLatency: 2s\nlatencies:\n  Microsoft.Compute/virtualMachines: 20s\nrbac: true\n",
        )
        .unwrap();
        assert!(config.rbac);
        assert_eq!(
            config.latency("microsoft.compute/virtualmachines"),
            Duration::from_secs(20)
        );
        assert_eq!(
            config.latency("Microsoft.Network/virtualNetworks"),
            Duration::from_secs(2)
        );
        assert_eq!(config.subscriptions.len(), 1);
        assert!(Config::from_yaml("").is_ok());
    }

    #[test]
    fn derived_object_ids_are_stable_version_5_uuids() {
        let id = super::derived_object_id("11111111-1111-1111-1111-111111111111");
        assert_eq!(
            id,
            super::derived_object_id("11111111-1111-1111-1111-111111111111".to_uppercase().as_str())
        );
        assert_ne!(
            id,
            super::derived_object_id("22222222-2222-2222-2222-222222222222")
        );
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 5);
    }

    #[test]
    fn unknown_fields_are_refused_with_their_name() {
        let err = Config::from_yaml("rbacc: true\n").unwrap_err().to_string();
        assert!(err.contains("rbacc"), "{err}");
    }

    #[test]
    fn the_readme_configuration_example_is_valid() {
        let readme = include_str!("../README.md");
        let example = readme
            .split("```yaml\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("the README has a YAML configuration example");
        let config = Config::from_yaml(example).expect("the example parses");
        assert_eq!(config.rate_limits.compute.put_vm.resource.burst, 12);
        assert_eq!(config.resources.len(), 2);
        assert_eq!(config.quotas.len(), 2);
        assert_eq!(config.sku_restrictions[1].zones, ["2", "3"]);
        assert_eq!(
            config.management_network.as_deref(),
            Some(config.resources[1].id.as_str())
        );
    }
}
