//! A bounded fuzzer of the ARM request handling.
//!
//! Each session sends a few hundred requests to one emulator, so that state builds up: paths of
//! every served type (and broken ones), api-versions valid and not, odd headers and tokens, and
//! bodies that start valid and are then broken (wrong types, missing or extra properties, malformed
//! or truncated JSON, huge numbers, references to resources that do not exist or are of another
//! type). Every answer is checked:
//!
//! - the router answers (a panic fails the test);
//! - no 5xx, unless a fault rule the fuzzer added asked for it, and no dropped connection unless
//!   one asked for that;
//! - every ARM error has ARM's shape, `{"error": {"code": "<non-empty>", "message": "..."}}`;
//! - a 400 about the request content says what is wrong, naming the property;
//! - a write is never accepted with a body that is not a JSON object, nor with a name Azure refuses;
//! - an unsupported api-version of a stored type is refused with `NoRegisteredProviderFound`, of a
//!   resource group or of tags with `InvalidApiVersionParameter`;
//!
//! and after every step the state must hold together: every resource of the inventory (and every
//! child resource kept inside one) reads back with 200 as itself, under a resource group and
//! parent that exist, its references fully qualified ids of the type their property names (and,
//! at every full check, of resources that still exist), and settling the operations leaves
//! nothing half-done.
//!
//! `cargo test` runs a few sessions from a fixed seed. `ARM_EMULATOR_FUZZ_SECONDS=N` runs sessions
//! from a fresh seed for N seconds (`just fuzz`). A failure prints the session's seed;
//! `ARM_EMULATOR_FUZZ_SEED=<seed>` replays that session alone.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "the fuzzer reports what it finds by failing the test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use arm_emulator::config::{DEFAULT_SUBSCRIPTION, Principal, Quota, SeedResource, SkuRestriction};
use arm_emulator::throttle::RateLimits;
use arm_emulator::{Config, Emulator};
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

mod bodies;
mod grammar;

/// Steps per session: enough for state to build up, few enough to replay one quickly.
const STEPS: usize = 250;
/// Sessions of a plain `cargo test` run.
const SESSIONS: usize = 6;
/// The seed of a plain `cargo test` run, so that it checks the same requests every time.
const FIXED_SEED: u64 = 0x00c0_ffee_5eed_0001;
/// Steps that only create valid resources, at the start of a session.
const PROLOGUE: usize = 12;
/// Every this many steps every resource is read back, not only a sample.
const FULL_CHECK_EVERY: usize = 50;

const SUB: &str = DEFAULT_SUBSCRIPTION;
/// The principal the fuzzer calls as.
const CLIENT: &str = "11111111-1111-1111-1111-111111111111";
const OBJECT_ID: &str = "5a0b6c8e-0000-4000-8000-00000000f022";
/// The principal the state checks call as, so that what the fuzzer does to its own access does
/// not blind them.
const CHECKER: &str = "22222222-2222-2222-2222-222222222222";
const CHECKER_OBJECT_ID: &str = "5a0b6c8e-0000-4000-8000-00000000c4ec";
const OWNER: &str = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635";
const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";

const NETWORK: &str = "2024-05-01";
const COMPUTE: &str = "2024-07-01";
const DISKS: &str = "2024-03-02";
const GALLERIES: &str = "2024-03-03";
const IDENTITY: &str = "2023-01-31";
const AUTHORIZATION: &str = "2022-04-01";
const DNS: &str = "2024-06-01";
const STORAGE: &str = "2023-05-01";
const RESOURCES: &str = "2021-04-01";
const AKS: &str = "2025-08-01";
const RESOURCE_GROUPS: &str = "Microsoft.Resources/resourceGroups";
/// Tags at a scope: answered by ARM itself, as resource groups are.
const TAGS: &str = "Microsoft.Resources/tags";

/// Every type kept in the store, with the api-version the fuzzer mostly uses.
const KINDS: &[(&str, &str)] = &[
    ("Microsoft.Network/virtualNetworks", NETWORK),
    ("Microsoft.Network/virtualNetworks/subnets", NETWORK),
    (
        "Microsoft.Network/virtualNetworks/virtualNetworkPeerings",
        NETWORK,
    ),
    ("Microsoft.Network/bastionHosts", NETWORK),
    ("Microsoft.Network/privateDnsZones", DNS),
    ("Microsoft.Network/privateDnsZones/virtualNetworkLinks", DNS),
    ("Microsoft.Network/privateDnsZones/A", DNS),
    ("Microsoft.Network/privateDnsZones/CNAME", DNS),
    ("Microsoft.Network/privateDnsZones/SOA", DNS),
    ("Microsoft.Network/privateDnsZones/AAAA", DNS),
    ("Microsoft.Network/privateDnsZones/TXT", DNS),
    ("Microsoft.Network/privateEndpoints", NETWORK),
    ("Microsoft.Network/privateEndpoints/privateDnsZoneGroups", NETWORK),
    ("Microsoft.Network/privateLinkServices", NETWORK),
    ("Microsoft.Storage/storageAccounts", STORAGE),
    ("Microsoft.Network/networkSecurityGroups", NETWORK),
    ("Microsoft.Network/networkSecurityGroups/securityRules", NETWORK),
    ("Microsoft.Network/routeTables", NETWORK),
    ("Microsoft.Network/routeTables/routes", NETWORK),
    ("Microsoft.Network/natGateways", NETWORK),
    ("Microsoft.Network/publicIPAddresses", NETWORK),
    ("Microsoft.Network/publicIPPrefixes", NETWORK),
    ("Microsoft.Network/loadBalancers", NETWORK),
    (
        "Microsoft.Network/loadBalancers/frontendIPConfigurations",
        NETWORK,
    ),
    ("Microsoft.Network/loadBalancers/backendAddressPools", NETWORK),
    ("Microsoft.Network/loadBalancers/loadBalancingRules", NETWORK),
    ("Microsoft.Network/loadBalancers/probes", NETWORK),
    ("Microsoft.Network/loadBalancers/inboundNatRules", NETWORK),
    ("Microsoft.Network/loadBalancers/outboundRules", NETWORK),
    ("Microsoft.Network/loadBalancers/inboundNatPools", NETWORK),
    ("Microsoft.Network/networkInterfaces", NETWORK),
    ("Microsoft.Network/networkInterfaces/ipConfigurations", NETWORK),
    ("Microsoft.ManagedIdentity/userAssignedIdentities", IDENTITY),
    (
        "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials",
        IDENTITY,
    ),
    ("Microsoft.Authorization/roleAssignments", AUTHORIZATION),
    ("Microsoft.Authorization/roleDefinitions", AUTHORIZATION),
    ("Microsoft.Compute/virtualMachines", COMPUTE),
    ("Microsoft.Compute/virtualMachines/extensions", COMPUTE),
    ("Microsoft.Compute/disks", DISKS),
    ("Microsoft.Compute/snapshots", DISKS),
    ("Microsoft.Compute/images", COMPUTE),
    ("Microsoft.Compute/galleries", GALLERIES),
    ("Microsoft.Compute/galleries/images", GALLERIES),
    ("Microsoft.Compute/galleries/images/versions", GALLERIES),
    ("Microsoft.Compute/capacityReservationGroups", COMPUTE),
    (
        "Microsoft.Compute/capacityReservationGroups/capacityReservations",
        COMPUTE,
    ),
    ("Microsoft.Compute/availabilitySets", COMPUTE),
    ("Microsoft.Compute/virtualMachineScaleSets", COMPUTE),
    ("Microsoft.Compute/virtualMachineScaleSets/extensions", COMPUTE),
    (
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
        COMPUTE,
    ),
    ("Microsoft.ContainerService/managedClusters", AKS),
    ("Microsoft.ContainerService/managedClusters/agentPools", AKS),
    (
        "Microsoft.ContainerService/managedClusters/maintenanceConfigurations",
        AKS,
    ),
];

/// Other api-versions the types serve, so that answers are shaped for older and newer ones too.
const OTHER_VERSIONS: &[(&str, &[&str])] = &[
    (NETWORK, &["2020-06-01", "2020-11-01", "2024-03-01", "2025-03-01"]),
    (COMPUTE, &["2020-06-01", "2020-12-01", "2022-03-01", "2024-11-01"]),
    (DISKS, &["2020-09-30", "2020-12-01", "2025-01-02"]),
    (GALLERIES, &["2022-03-03", "2023-07-03", "2026-03-03"]),
    (IDENTITY, &["2018-11-30", "2024-11-30"]),
    (AUTHORIZATION, &["2015-07-01", "2020-08-01-preview"]),
    (RESOURCES, &["2019-10-01", "2025-04-01"]),
    (DNS, &["2018-09-01", "2020-06-01"]),
    (STORAGE, &["2021-04-01", "2026-09-01"]),
    (AKS, &["2024-09-01", "2025-10-02-preview", "2022-04-01"]),
];

/// Child resources kept inside their parent's document: (parent type, array property).
const EMBEDDED: &[(&str, &str)] = &[
    ("Microsoft.Network/virtualNetworks", "subnets"),
    ("Microsoft.Network/virtualNetworks", "virtualNetworkPeerings"),
    ("Microsoft.Network/networkSecurityGroups", "securityRules"),
    ("Microsoft.Network/routeTables", "routes"),
    ("Microsoft.Network/loadBalancers", "frontendIPConfigurations"),
    ("Microsoft.Network/loadBalancers", "backendAddressPools"),
    ("Microsoft.Network/loadBalancers", "loadBalancingRules"),
    ("Microsoft.Network/loadBalancers", "probes"),
    ("Microsoft.Network/loadBalancers", "inboundNatRules"),
    ("Microsoft.Network/loadBalancers", "outboundRules"),
    ("Microsoft.Network/loadBalancers", "inboundNatPools"),
    ("Microsoft.Network/networkInterfaces", "ipConfigurations"),
];

/// Small pools of names, so that requests meet each other's resources.
const GROUPS: &[&str] = &["fz", "fz", "fz2", "FZ"];
const NAMES: &[&str] = &["one", "two", "ONE"];
/// Private DNS zones are domain names of two labels at least.
const ZONE_NAMES: &[&str] = &["one.example", "two.example", "ONE.example"];
/// Storage account names: lower-case letters and digits, unique across Azure.
const ACCOUNT_NAMES: &[&str] = &["fuzzstore1", "fuzzstore2", "FuzzStore1"];
const CHILDREN: &[&str] = &["sub", "alt"];
/// AKS takes three maintenance configuration names only.
const MAINTENANCE_NAMES: &[&str] = &["default", "aksManagedAutoUpgradeSchedule", "sub"];
/// Gallery image versions are named `Major.Minor.Patch`.
const VERSION_NAMES: &[&str] = &["1.0.0", "1.0.1", "1.0"];
const GUIDS: &[&str] = &[
    "7b83888d-03fb-55bb-8209-aec4e36328a8",
    "0f8fad5b-d9cb-469f-a165-70867728950e",
];
const LOCATIONS: &[&str] = &[
    "westeurope",
    "westeurope",
    "westeurope",
    "westeurope",
    "West Europe",
    "westus2",
    "centralus",
    "nowhere",
    "",
];

/// Names ARM may refuse or that make the path mean something else.
const ODD_NAMES: &[&str] = &[
    "",
    " ",
    "a b",
    ".",
    "..",
    "a.",
    "-a",
    "_",
    "%2F",
    "%2e%2e",
    "%ZZ",
    "%",
    "%00",
    "\u{0}",
    "\t",
    "é",
    "名前",
    "\u{1F600}",
    "a;b",
    "a=b",
    "a&b",
    "a+b",
    "a'b",
    "a\"b",
    "a<b>",
    "a\\b",
    "a/b",
    "a//b",
    "a?b",
    "a#b",
    "providers",
    "subscriptions",
    "resourceGroups",
    "locations",
    "operations",
    "NUL",
    "con",
    "-",
    "*",
];

/// Paths of ids that name nothing, or nothing that can be referred to.
const BROKEN_IDS: &[&str] = &[
    "",
    "not-an-id",
    "/",
    "/subscriptions",
    "/subscriptions/",
    "/subscriptions/00000000-0000-0000-0000-000000000000",
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/fz",
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/fz/providers/Microsoft.Network/virtualNetworks",
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/fz/providers/Microsoft.Network/virtualNetworks/a/subnets",
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/../providers/Microsoft.Network/virtualNetworks/a",
    "/subscriptions/99999999-0000-0000-0000-000000000000/resourceGroups/fz/providers/Microsoft.Network/virtualNetworks/a/subnets/c",
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/fz/providers/Microsoft.Nope/things/a",
    "/providers/Microsoft.Network/virtualNetworks/a",
    "//subscriptions//resourceGroups",
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/fz/providers/Microsoft.Compute/disks/a/b/c",
];

/// Address prefixes, valid and not, IPv4 and IPv6, tiny and huge.
const PREFIXES: &[&str] = &[
    "10.0.0.0/16",
    "10.0.0.0/16",
    "10.0.0.0/16",
    "10.1.0.0/16",
    "10.0.0.0/8",
    "0.0.0.0/0",
    "10.0.0.1/32",
    "fd00::/48",
    "fd00::/128",
    "::/0",
    "10.0.0.0/33",
    "10.0.0.0",
    "banana",
];
const SUBNET_PREFIXES: &[&str] = &[
    "10.0.1.0/24",
    "10.0.1.0/24",
    "10.0.2.0/24",
    "10.0.3.0/28",
    "10.0.1.0/31",
    "10.0.1.7/32",
    "10.0.0.0/16",
    "fd00::/64",
    "fd00::/128",
    "10.9.0.0/24",
    "300.0.0.0/24",
];

/// splitmix64: tiny, fast and good enough to steer a fuzzer.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (zero when `n` is zero).
    fn below(&mut self, n: usize) -> usize {
        let n = u64::try_from(n.max(1)).unwrap();
        usize::try_from(self.next() % n).unwrap()
    }

    fn percent(&mut self, chance: u64) -> bool {
        self.next() % 100 < chance
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What a request's body is, for the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Empty,
    Object,
    OtherJson,
    NotJson,
}

/// A request the fuzzer sends.
struct Req {
    method: Method,
    path: String,
    query: String,
    headers: Vec<(&'static str, Vec<u8>)>,
    body: Vec<u8>,
    /// Whether ARM answers it (as opposed to the operations API).
    arm: bool,
    /// The stored type the path names, when the path was built from the grammar unchanged.
    kind: Option<&'static str>,
}

impl Req {
    fn new(method: Method, path: String, query: String) -> Self {
        Self {
            method,
            path,
            query,
            headers: Vec::new(),
            body: Vec::new(),
            arm: true,
            kind: None,
        }
    }

    /// The request target. A generated path may lack its leading slash (a scope spliced in
    /// whole); on the wire every origin-form target has one, so it is added.
    /// The request target as an HTTP client sends it: a leading slash, and every character a URI
    /// may not hold percent-encoded.
    fn uri(&self) -> String {
        let slash = if self.path.starts_with('/') { "" } else { "/" };
        let (path, query) = (escape_uri(&self.path), escape_uri(&self.query));
        if query.is_empty() {
            format!("{slash}{path}")
        } else {
            format!("{slash}{path}?{query}")
        }
    }

    fn body_kind(&self) -> BodyKind {
        if self.body.is_empty() {
            return BodyKind::Empty;
        }
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(_)) => BodyKind::Object,
            Ok(_) => BodyKind::OtherJson,
            Err(_) => BodyKind::NotJson,
        }
    }

    fn describe(&self) -> String {
        let mut text = format!("{} {}", self.method, shorten(&self.uri(), 400));
        for (name, value) in &self.headers {
            let value = String::from_utf8_lossy(value);
            let _ = write!(text, "\n  {name}: {}", shorten(&value, 120));
        }
        if !self.body.is_empty() {
            let body = String::from_utf8_lossy(&self.body);
            let _ = write!(text, "\n  body: {}", shorten(&body, 600));
        }
        text
    }
}

/// Percent-encodes what cannot stand in a URI (spaces, controls, non-ASCII, `"#<>\\^`{|}`), as
/// HTTP clients do before sending; everything else, `%` included, goes as it is.
fn escape_uri(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_graphic() && !matches!(c, '"' | '#' | '<' | '>' | '\\' | '^' | '`' | '{' | '|' | '}') {
            escaped.push(c);
        } else {
            let mut bytes = [0; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(escaped, "%{byte:02X}");
            }
        }
    }
    escaped
}

fn shorten(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let kept: String = text.chars().take(limit).collect();
    format!("{kept}… ({} bytes)", text.len())
}

/// An answer.
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    bytes: Vec<u8>,
    json: Option<Value>,
    /// Whether the body broke off: the connection was dropped.
    dropped: bool,
}

impl Reply {
    fn code(&self) -> &str {
        self.json
            .as_ref()
            .and_then(|body| body.pointer("/error/code"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn describe(&self) -> String {
        if self.dropped {
            return "the connection was dropped".to_owned();
        }
        format!(
            "{} {}",
            self.status,
            shorten(&String::from_utf8_lossy(&self.bytes), 1500)
        )
    }
}

/// What the fuzzing did, for the summary.
#[derive(Default)]
struct Stats {
    sessions: usize,
    cases: u64,
    checks: u64,
    statuses: BTreeMap<u16, u64>,
    codes: BTreeMap<String, u64>,
    /// Connections fault rules dropped.
    dropped: u64,
}

/// Fails the test with the request and its answer (the session adds its seed as it unwinds).
fn fail(what: &str, request: &Req, reply: &Reply) -> ! {
    panic!(
        "{what}\nrequest: {}\nanswer: {}",
        request.describe(),
        reply.describe()
    );
}

/// Lowercases and drops slashes at either end, to compare paths and ids.
fn normal(path: &str) -> String {
    path.trim_matches('/').to_ascii_lowercase()
}

/// Percent-encodes what may not stand in a URI path segment; `%` stays, so that names can carry
/// escapes of their own (valid or not).
fn encode(text: &str, keep: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric()
            || b"-._~!$&'()*+,;=:@%".contains(&byte)
            || keep.as_bytes().contains(&byte)
        {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The resource group a resource id lies in, lower-cased.
fn group_of(id: &str) -> Option<String> {
    let lower = normal(id);
    let parts: Vec<&str> = lower.split('/').collect();
    match parts.as_slice() {
        ["subscriptions", subscription, "resourcegroups", group, _, ..] => {
            Some(format!("subscriptions/{subscription}/resourcegroups/{group}"))
        }
        _ => None,
    }
}

fn version_of(type_name: &str) -> &'static str {
    KINDS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(type_name))
        .map_or(RESOURCES, |(_, version)| *version)
}

fn kind_of(type_name: &str) -> Option<&'static str> {
    KINDS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(type_name))
        .map(|(name, _)| *name)
}

/// One emulator and what the fuzzer has learnt about it.
struct Session {
    seed: u64,
    rng: Rng,
    emulator: Emulator,
    router: Router,
    token: String,
    checker_token: String,
    /// Tokens minted before the clock moved past their expiry.
    expired: Vec<String>,
    /// (status, code) of the errors fault rules were asked to inject: the only 5xx allowed.
    injected: Vec<(u16, String)>,
    /// Whether a fault rule was asked to drop connections: the only dropped ones allowed.
    drops: bool,
    /// Operation URLs (path and query) that answers named.
    operations: Vec<String>,
    etags: Vec<String>,
    /// Resources whose own deletion was accepted (lower-cased): a write may have referred to one
    /// while it was being deleted, which the emulator does not refuse, so references to them
    /// may dangle.
    deleted: Vec<String>,
    /// Resources seen: (type, id).
    known: Vec<(String, String)>,
    step: usize,
    /// Whether bodies are being built valid, for a build step.
    strict: bool,
    /// Whether a damaged snapshot was restored: the state need not hold together any more.
    tainted: bool,
    /// What a valid body needed that does not exist yet: what to build first.
    missing: Vec<&'static str>,
    last: String,
    last_path: String,
    stats: Stats,
}

impl Drop for Session {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "\nfuzz: FAILED at step {} of session {:#018x}\nfuzz: last request: {}\nfuzz: replay it with ARM_EMULATOR_FUZZ_SEED={:#018x} cargo test -p arm-emulator --test fuzz -- --nocapture\n",
                self.step, self.seed, self.last, self.seed
            );
        }
    }
}

fn config(rng: &mut Rng) -> Config {
    let mut config = Config {
        rate_limits: RateLimits::unlimited(),
        ..Config::default()
    };
    config.principals = vec![
        Principal {
            object_id: Some(OBJECT_ID.into()),
            ..config.principals[0].clone()
        },
        Principal {
            client_id: CHECKER.into(),
            object_id: Some(CHECKER_OBJECT_ID.into()),
            ..config.principals[0].clone()
        },
    ];
    if rng.percent(30) {
        config.page_size = 1 + rng.below(3);
    }
    if rng.percent(30) {
        config.operation_latency = Duration::from_secs(30);
    }
    if rng.percent(15) {
        config.quotas.push(Quota {
            location: "westeurope".into(),
            family: (*rng.pick(&["cores", "standardDSv3Family"])).into(),
            cores: 4,
        });
    }
    if rng.percent(15) {
        // A size barred in one zone, or in the whole location.
        let zones = if rng.percent(50) {
            vec!["2".into()]
        } else {
            Vec::new()
        };
        config.sku_restrictions.push(SkuRestriction {
            size: (*rng.pick(&["Standard_D2s_v3", "Standard_D4s_v3"])).into(),
            location: "westeurope".into(),
            zones,
        });
    }
    if rng.percent(12) {
        config.rbac = true;
        let assignment = |scope: &str, guid: &str, principal: &str| SeedResource {
            id: format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{guid}"),
            body: json!({"properties": {
                "principalId": principal,
                "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{OWNER}"),
            }}),
        };
        config.resources = vec![
            assignment("", "c4ec0000-0000-4000-8000-000000000001", CHECKER_OBJECT_ID),
            assignment(&format!("/subscriptions/{SUB}"), GUIDS[0], OBJECT_ID),
        ];
    }
    config
}

impl Session {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        let emulator = Emulator::new(config(&mut rng));
        emulator.seed_resources().unwrap();
        let token = emulator.access_token(CLIENT).unwrap();
        let checker_token = emulator.access_token(CHECKER).unwrap();
        Self {
            seed,
            rng,
            router: emulator.router(),
            emulator,
            token,
            checker_token,
            expired: Vec::new(),
            injected: Vec::new(),
            drops: false,
            operations: Vec::new(),
            etags: Vec::new(),
            deleted: Vec::new(),
            known: Vec::new(),
            step: 0,
            strict: false,
            tainted: false,
            missing: Vec::new(),
            last: String::new(),
            last_path: String::new(),
            stats: Stats::default(),
        }
    }

    async fn send(&mut self, request: &Req) -> Reply {
        self.last = request.describe();
        let mut builder = Request::builder()
            .method(request.method.clone())
            .uri(request.uri());
        for (name, value) in &request.headers {
            builder = builder.header(*name, HeaderValue::from_bytes(value).unwrap());
        }
        let request = builder.body(Body::from(request.body.clone())).unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        // A body that breaks off is how a dropped connection shows without a socket.
        let (bytes, dropped) = match to_bytes(response.into_body(), usize::MAX).await {
            Ok(bytes) => (bytes.to_vec(), false),
            Err(_) => (Vec::new(), true),
        };
        let json = serde_json::from_slice(&bytes).ok();
        Reply {
            status,
            headers,
            bytes,
            json,
            dropped,
        }
    }

    /// A read as the checker, retried while injected faults answer it.
    async fn read(&mut self, path: &str, version: &str) -> (Req, Reply) {
        let mut request = Req::new(Method::GET, encode(path, "/"), format!("api-version={version}"));
        request.headers.push((
            "authorization",
            format!("Bearer {}", self.checker_token).into_bytes(),
        ));
        for _ in 0..10 {
            let reply = self.send(&request).await;
            self.stats.checks += 1;
            let injected = reply.dropped
                || self
                    .injected
                    .iter()
                    .any(|(status, code)| *status == reply.status.as_u16() && code == reply.code());
            if !injected {
                return (request, reply);
            }
        }
        let reply = self.send(&request).await;
        (request, reply)
    }

    async fn admin(&mut self, method: Method, path: &str, body: Option<Vec<u8>>) -> (Req, Reply) {
        let mut request = Req::new(method, path.to_owned(), String::new());
        request.arm = false;
        if let Some(body) = body {
            request.body = body;
            request
                .headers
                .push(("content-type", b"application/json".to_vec()));
        }
        let reply = self.send(&request).await;
        if reply.status.is_server_error() || reply.dropped {
            fail("the operations API failed", &request, &reply);
        }
        (request, reply)
    }

    async fn run(&mut self, deadline: Option<Instant>) {
        while self.step < STEPS && deadline.is_none_or(|deadline| Instant::now() < deadline) {
            self.step += 1;
            // The first steps build something for the rest to break.
            if self.step <= PROLOGUE {
                self.build().await;
                self.check_state(false).await;
                continue;
            }
            // Per mille: mostly requests to ARM, some building, the rest moves the world around.
            match self.rng.below(1000) {
                0..=3 => self.reset().await,
                4..=19 => self.snapshot_round_trip().await,
                20..=39 => self.add_fault().await,
                40..=47 => {
                    self.admin(Method::DELETE, "/_emulator/faults", None).await;
                }
                48..=89 => self.advance_clock(),
                90..=169 => self.poll_operation().await,
                170..=299 => self.build().await,
                _ => self.arm_request().await,
            }
            self.check_state(self.step.is_multiple_of(FULL_CHECK_EVERY) || self.step == STEPS)
                .await;
        }
    }
}

/// The steps.
impl Session {
    /// Creates or replaces a resource (or a group) the way a client would, so that the state
    /// grows deep enough for the other steps to meet: machines on interfaces on subnets.
    async fn build(&mut self) {
        let mut kind = if self.step <= 2 || self.rng.percent(10) {
            RESOURCE_GROUPS
        } else {
            self.rng.pick(KINDS).0
        };
        // What the resource needs comes first: a build step makes the deepest missing part.
        let mut planned = None;
        for _ in 0..8 {
            if kind == RESOURCE_GROUPS {
                let group = if self.step == 2 { "fz2" } else { "fz" };
                let path = format!("/subscriptions/{SUB}/resourceGroups/{group}");
                planned = Some((path, json!({"location": "westeurope"})));
                break;
            }
            self.strict = true;
            self.missing.clear();
            let path = self.fabricate(kind);
            let body = self.valid_body(kind, &path);
            self.strict = false;
            if let Some(first) = self.missing.first() {
                kind = first;
            } else {
                planned = Some((path, body));
                break;
            }
        }
        let Some((path, body)) = planned else {
            return;
        };
        let mut request = Req::new(Method::PUT, path, format!("api-version={}", version_of(kind)));
        request.kind = Some(kind);
        request.body = serde_json::to_vec(&body).unwrap();
        request
            .headers
            .push(("authorization", format!("Bearer {}", self.token).into_bytes()));
        self.last_path.clone_from(&request.path);
        let reply = self.send(&request).await;
        self.check(&request, &reply);
        self.learn(&request, &reply);
    }

    async fn arm_request(&mut self) {
        let mut request = match self.rng.below(100) {
            0..=11 => self.group_request(),
            12..=75 => self.resource_request(),
            76..=85 => self.collection_request(),
            86..=92 => self.catalogue_request(),
            93..=95 => self.operation_request(),
            96..=97 => self.tags_or_list_request(),
            _ => self.odd_request(),
        };
        let kind = request.kind;
        let own = request.path.clone();
        if request.method == Method::PUT {
            request.body = self.put_body(kind, &own);
        } else if request.method == Method::PATCH {
            request.body = self.patch_body(kind, &own);
        } else if self.rng.percent(3) {
            request.body = self.put_body(kind, &own);
        }
        if self.rng.below(1000) < 3 {
            // Past ARM's 4 MB limit, or just under it: whitespace keeps the JSON what it was.
            let size: usize = *self.rng.pick(&[3 << 20, (4 << 20) + 1]);
            let padding = size.saturating_sub(request.body.len());
            request
                .body
                .splice(0..0, std::iter::repeat_n(b' ', padding))
                .for_each(drop);
        }
        self.headers(&mut request);
        self.last_path.clone_from(&request.path);
        let reply = self.send(&request).await;
        self.check(&request, &reply);
        self.learn(&request, &reply);
    }

    /// Remembers what an answer tells: operation URLs, etags, the resources it shows.
    fn learn(&mut self, request: &Req, reply: &Reply) {
        for header in ["azure-asyncoperation", "location"] {
            if let Some(url) = reply.headers.get(header).and_then(|value| value.to_str().ok()) {
                let local = url.trim_start_matches(&self.emulator.base_url()).to_owned();
                if !self.operations.contains(&local) {
                    self.operations.push(local);
                }
            }
        }
        if let Some(etag) = reply.headers.get("etag").and_then(|value| value.to_str().ok())
            && !self.etags.iter().any(|known| known == etag)
        {
            self.etags.push(etag.to_owned());
        }
        if reply.status.is_success()
            && request.method != Method::DELETE
            && let Some(body) = &reply.json
        {
            self.remember(body);
        }
        if request.method == Method::DELETE
            && reply.status.is_success()
            && request.kind.is_some_and(|kind| kind != RESOURCE_GROUPS)
        {
            self.deleted.push(normal(&request.path));
        }
    }

    fn remember(&mut self, body: &Value) {
        if let (Some(id), Some(kind)) = (
            body.get("id").and_then(Value::as_str),
            body.get("type").and_then(Value::as_str),
        ) && !self.known.iter().any(|(_, known)| known.eq_ignore_ascii_case(id))
        {
            self.known.push((kind.to_owned(), id.to_owned()));
        }
        let children: Vec<(String, String)> = children_of(body);
        for child in children {
            if !self
                .known
                .iter()
                .any(|(_, known)| known.eq_ignore_ascii_case(&child.1))
            {
                self.known.push(child);
            }
        }
    }

    async fn poll_operation(&mut self) {
        let operations = self.operations.clone();
        let Some(url) = operations.get(self.rng.below(operations.len())) else {
            let request = self.operation_request();
            return self.send_checked(request).await;
        };
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let mut path = path.to_owned();
        let mut query = query.to_owned();
        if self.rng.percent(10) {
            path = format!("{}x", path.trim_end_matches(|c: char| c != '/'));
        }
        if self.rng.percent(10) {
            query = self.query("2099-01-01");
        }
        let mut request = Req::new(Method::GET, path, query);
        self.headers(&mut request);
        self.send_checked(request).await;
    }

    async fn send_checked(&mut self, mut request: Req) {
        if request.headers.is_empty() {
            self.headers(&mut request);
        }
        let reply = self.send(&request).await;
        self.check(&request, &reply);
        self.learn(&request, &reply);
    }

    fn advance_clock(&mut self) {
        if self.rng.percent(5) {
            // Past the tokens' lifetime: the old ones expire, new ones are needed.
            self.emulator.advance_clock(Duration::from_hours(2));
            let old = std::mem::take(&mut self.token);
            self.expired.push(old);
            self.token = self.emulator.access_token(CLIENT).unwrap();
            self.checker_token = self.emulator.access_token(CHECKER).unwrap();
        } else {
            let seconds = 1 + u64::try_from(self.rng.below(90)).unwrap();
            self.emulator.advance_clock(Duration::from_secs(seconds));
        }
    }

    async fn reset(&mut self) {
        let (request, reply) = self.admin(Method::POST, "/_emulator/reset", None).await;
        if reply.status != StatusCode::NO_CONTENT {
            fail("the reset failed", &request, &reply);
        }
        self.known.clear();
        self.operations.clear();
        self.deleted.clear();
    }

    /// Adds a fault rule (or garbage, which must not break the operations API), remembering what
    /// the rules in force inject.
    async fn add_fault(&mut self) {
        let pattern = *self.rng.pick(&[
            "*",
            "*/virtualNetworks/*",
            "*/resourceGroups/*",
            "*/virtualMachines/*",
            "*/disks/*",
            "*/natGateways/*",
        ]);
        let status = *self.rng.pick(&[500_u16, 503, 409, 429, 400, 404]);
        let code = *self.rng.pick(&[
            "InternalServerError",
            "ServiceUnavailable",
            "Conflict",
            "TooManyRequests",
            "ZonalAllocationFailed",
        ]);
        let count = 1 + self.rng.below(3);
        let method = *self.rng.pick(&["PUT", "GET", "DELETE", "PATCH"]);
        // Latencies stay short: they are real time.
        let latency = 1 + self.rng.below(5);
        let mut rule = match self.rng.below(13) {
            0..=5 => {
                json!({"method": method, "path": pattern, "status": status, "code": code, "count": count})
            }
            6 => {
                json!({"method": "PUT", "path": pattern, "failOperation": true, "code": code, "count": count})
            }
            7 => {
                json!({"method": "PUT", "path": pattern, "cancelOperation": true, "code": code, "count": count})
            }
            8 => json!({"path": pattern, "status": 429, "count": count}),
            9 => json!({"method": method, "path": pattern, "latencyMs": latency, "count": count}),
            10 => json!({"method": method, "path": pattern, "dropConnection": true, "count": count}),
            11 => {
                json!({"path": pattern, "status": status, "code": code, "latencyMs": latency, "count": count})
            }
            _ => self.garbage(2),
        };
        if rule.get("path").is_some_and(Value::is_string) && self.rng.percent(30) {
            rule["percent"] = json!(*self.rng.pick(&[10, 50, 90]));
        }
        let body = serde_json::to_vec(&rule).unwrap();
        let (request, reply) = self.admin(Method::POST, "/_emulator/faults", Some(body)).await;
        match reply.status {
            StatusCode::CREATED => self.register_faults().await,
            StatusCode::BAD_REQUEST if rule.get("path").is_none_or(|path| !path.is_string()) => {}
            _ => fail("a fault rule got an unexpected answer", &request, &reply),
        }
    }

    /// Notes the errors the rules in force inject, as the emulator words them.
    async fn register_faults(&mut self) {
        let (_, reply) = self.admin(Method::GET, "/_emulator/faults", None).await;
        let rules = reply
            .json
            .as_ref()
            .and_then(|body| body["faults"].as_array().cloned())
            .unwrap_or_default();
        for rule in rules {
            let fault = &rule["fault"];
            if fault["dropConnection"] == json!(true) {
                self.drops = true;
            }
            // Rules that only delay or drop inject no error.
            if fault["status"].is_null() && fault["failOperation"] != json!(true) {
                continue;
            }
            let status = fault["status"]
                .as_u64()
                .and_then(|status| u16::try_from(status).ok())
                .unwrap_or(500);
            let code = fault["code"].as_str().map_or_else(
                || {
                    match status {
                        429 => "TooManyRequests",
                        409 => "Conflict",
                        404 => "NotFound",
                        400 => "BadRequest",
                        503 => "ServiceUnavailable",
                        _ => "InternalServerError",
                    }
                    .to_owned()
                },
                str::to_owned,
            );
            if !self.injected.contains(&(status, code.clone())) {
                self.injected.push((status, code));
            }
        }
    }

    /// Saves the state and restores it: nothing may change, and nothing may stay half-done once
    /// operations are settled.
    async fn snapshot_round_trip(&mut self) {
        let (request, snapshot) = self.admin(Method::GET, "/_emulator/snapshot", None).await;
        if snapshot.status != StatusCode::OK || snapshot.json.is_none() {
            fail("the snapshot failed", &request, &snapshot);
        }
        if self.rng.percent(25) {
            return self.restore_broken(snapshot.json.unwrap_or_default()).await;
        }
        let before = self.inventory().await;
        for (id, kind, state) in before.iter().filter(|_| !self.tainted) {
            assert!(
                !matches!(state.as_str(), "Creating" | "Updating" | "Deleting"),
                "{kind} {id} is still '{state}' once every operation is settled"
            );
        }
        let (request, restored) = self
            .admin(Method::PUT, "/_emulator/snapshot", Some(snapshot.bytes))
            .await;
        if restored.status != StatusCode::NO_CONTENT {
            fail("a snapshot did not restore", &request, &restored);
        }
        let after = self.inventory().await;
        assert_eq!(before, after, "a snapshot round trip changed the inventory");
    }
}

impl Session {
    /// Restores a damaged snapshot: refused or not, the emulator must go on answering. What an
    /// accepted one restores need not hold together, so the state checks stop there.
    async fn restore_broken(&mut self, mut snapshot: Value) {
        for _ in 0..=self.rng.below(3) {
            self.mutate(&mut snapshot);
        }
        let body = serde_json::to_vec(&snapshot).unwrap();
        let (request, reply) = self.admin(Method::PUT, "/_emulator/snapshot", Some(body)).await;
        match reply.status {
            StatusCode::NO_CONTENT => self.tainted = true,
            StatusCode::BAD_REQUEST => {}
            _ => fail("a damaged snapshot got an unexpected answer", &request, &reply),
        }
    }
}

/// The checks.
impl Session {
    /// Checks one answer to an ARM request.
    fn check(&mut self, request: &Req, reply: &Reply) {
        if reply.dropped {
            if !self.drops {
                fail(
                    "a connection dropped that no fault rule asked to drop",
                    request,
                    reply,
                );
            }
            self.stats.cases += 1;
            self.stats.dropped += 1;
            return;
        }
        let status = reply.status.as_u16();
        self.stats.cases += 1;
        *self.stats.statuses.entry(status).or_default() += 1;
        if !reply.code().is_empty() {
            *self.stats.codes.entry(reply.code().to_owned()).or_default() += 1;
        }
        // An answer to HEAD has no body, so an injected error shows only its status.
        let head = request.method == Method::HEAD;
        let injected = self
            .injected
            .iter()
            .any(|(injected, code)| *injected == status && (head || code == reply.code()));
        if reply.status.is_server_error() && !injected {
            fail("a server error that no fault rule asked for", request, reply);
        }
        if !request.arm {
            return;
        }
        if reply.headers.get("x-ms-request-id").is_none() {
            fail("an ARM answer without x-ms-request-id", request, reply);
        }
        // Microsoft.Resources refuses an api-version itself; a provider's type is refused as if
        // no provider were registered for it.
        let provider_refusal = match reply.code() {
            "InvalidApiVersionParameter" => Some(false),
            "NoRegisteredProviderFound" => Some(true),
            _ => None,
        };
        if let (Some(kind), Some(provider)) = (request.kind, provider_refusal)
            && provider != (kind != RESOURCE_GROUPS && kind != TAGS)
        {
            fail(
                "an api-version was refused with another code than ARM's for the type",
                request,
                reply,
            );
        }
        let error = reply.status.is_client_error() || reply.status.is_server_error();
        if error && (request.method != Method::HEAD || !reply.bytes.is_empty()) {
            check_error_shape(request, reply);
        }
        if reply.status.is_success() && !reply.bytes.is_empty() && reply.json.is_none() {
            fail("a successful answer whose body is not JSON", request, reply);
        }
        let writes = request.method == Method::PUT || request.method == Method::PATCH;
        if writes
            && reply.status.is_success()
            && matches!(
                request.body_kind(),
                BodyKind::NotJson | BodyKind::OtherJson | BodyKind::Empty
            )
        {
            fail(
                "a write was accepted with a body that is not a JSON object",
                request,
                reply,
            );
        }
        let name = request
            .path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        if request.method == Method::PUT
            && reply.status.is_success()
            && !self.tainted
            && (name.contains('%') || name.chars().all(|c| c == '.') || name.chars().count() > 128)
        {
            fail("a name Azure refuses was accepted", request, reply);
        }
        if request.kind.is_some()
            && reply.status.is_success()
            && request.method != Method::DELETE
            && let Some(id) = reply
                .json
                .as_ref()
                .and_then(|body| body.get("id"))
                .and_then(Value::as_str)
            && normal(id) != normal(&request.path)
        {
            fail(
                "the answer is about another resource than the one asked for",
                request,
                reply,
            );
        }
    }

    /// The inventory: (id, type, provisioning state) of every resource, checking its shape.
    async fn inventory(&mut self) -> Vec<(String, String, String)> {
        let (request, reply) = self.admin(Method::GET, "/_emulator/inventory", None).await;
        let Some(body) = &reply.json else {
            fail("the inventory is not JSON", &request, &reply);
        };
        let items = body["resources"].as_array().cloned().unwrap_or_default();
        if body["count"].as_u64() != Some(u64::try_from(items.len()).unwrap()) {
            fail("the inventory's count is not its length", &request, &reply);
        }
        let mut resources: Vec<(String, String, String)> = items
            .iter()
            .map(|item| {
                (
                    item["id"].as_str().unwrap_or_default().to_owned(),
                    item["type"].as_str().unwrap_or_default().to_owned(),
                    item["provisioningState"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        resources.sort();
        resources
    }

    /// Checks that the state holds together: no orphans, and resources read back as themselves.
    async fn check_state(&mut self, full: bool) {
        let resources = self.inventory().await;
        if self.tainted {
            return;
        }
        let ids: BTreeSet<String> = resources.iter().map(|(id, _, _)| normal(id)).collect();
        for (id, kind, _) in &resources {
            assert!(!id.is_empty(), "the inventory lists a {kind} without an id");
            if kind != RESOURCE_GROUPS
                && let Some(group) = group_of(id)
                && !ids.contains(&group)
            {
                panic!("{id} outlived its resource group");
            }
            if matches!(
                kind.as_str(),
                "Microsoft.Compute/virtualMachines/extensions"
                    | "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials"
            ) {
                let parent = id.rsplitn(3, '/').nth(2).unwrap_or_default();
                assert!(ids.contains(&normal(parent)), "{id} outlived its parent {parent}");
            }
        }
        // Forget what is gone, so that references mostly name what exists.
        self.known.retain(|(kind, id)| {
            let embedded = EMBEDDED
                .iter()
                .any(|(parent, property)| kind.eq_ignore_ascii_case(&format!("{parent}/{property}")));
            let document = if embedded {
                id.rsplitn(3, '/').nth(2).unwrap_or_default()
            } else {
                id
            };
            ids.contains(&normal(document))
        });
        let mut picks: Vec<(String, String)> = Vec::new();
        let related = normal(&self.last_path);
        for (id, kind, _) in &resources {
            let lower = normal(id);
            // What the last request named, what lies above it, and what lies in it when it named
            // a provider resource.
            let touched = related == lower
                || related.starts_with(&format!("{lower}/"))
                || (related.split('/').count() >= 8 && lower.starts_with(&format!("{related}/")));
            if full || touched {
                picks.push((id.clone(), kind.clone()));
            }
        }
        if !full {
            for _ in 0..1 {
                if let Some((id, kind, _)) = resources.get(self.rng.below(resources.len())) {
                    picks.push((id.clone(), kind.clone()));
                }
            }
        }
        if full {
            self.known.clear();
        }
        for (id, kind) in picks {
            let body = self.read_back(&id, &kind).await;
            if full {
                check_nothing_dangles(&ids, &self.deleted, &id, &body);
                self.remember(&body);
                for (child_kind, child_id) in children_of(&body) {
                    self.read_back(&child_id, &child_kind).await;
                }
            }
        }
    }

    /// Reads a resource as the checker: it must answer 200 with itself.
    async fn read_back(&mut self, id: &str, kind: &str) -> Value {
        let (request, reply) = self.read(id, version_of(kind)).await;
        if reply.status != StatusCode::OK {
            fail(&format!("a stored {kind} does not read back"), &request, &reply);
        }
        let body = reply.json.clone().unwrap_or_default();
        let answered = body.get("id").and_then(Value::as_str).unwrap_or_default();
        if normal(answered) != normal(id) {
            fail(
                &format!("a stored {kind} reads back as something else"),
                &request,
                &reply,
            );
        }
        let mut references = Vec::new();
        references_of(&body, &mut references);
        for (property, target) in references {
            if let Some(problem) = reference_problem(property, target) {
                fail(
                    &format!("'{property}' of a stored {kind} refers to {target}, {problem}"),
                    &request,
                    &reply,
                );
            }
        }
        body
    }
}

/// Properties whose `{"id": ...}` refers to a resource of one type: (property, last type segment).
/// The fuzzer keeps its own table, written from Azure's schemas, so that the check does not take
/// the emulator's word for what each property may refer to.
const REFERENCES: &[(&str, &str)] = &[
    ("subnet", "subnets"),
    ("networkSecurityGroup", "networkSecurityGroups"),
    ("routeTable", "routeTables"),
    ("natGateway", "natGateways"),
    ("publicIPAddress", "publicIPAddresses"),
    ("publicIpAddresses", "publicIPAddresses"),
    ("publicIPPrefix", "publicIPPrefixes"),
    ("publicIpPrefixes", "publicIPPrefixes"),
    ("loadBalancerBackendAddressPools", "backendAddressPools"),
    ("loadBalancerInboundNatRules", "inboundNatRules"),
    ("backendAddressPool", "backendAddressPools"),
    ("frontendIPConfiguration", "frontendIPConfigurations"),
    ("probe", "probes"),
    ("networkInterfaces", "networkInterfaces"),
    ("availabilitySet", "availabilitySets"),
    ("managedDisk", "disks"),
    ("remoteVirtualNetwork", "virtualNetworks"),
    ("virtualNetwork", "virtualNetworks"),
];

/// References Azure lets dangle: a peering's remote network and a DNS zone link's network may be
/// deleted under them.
const WEAK: &[&str] = &["remoteVirtualNetwork", "virtualNetwork"];

/// Every reference a stored resource makes names a resource the inventory holds (or a child
/// kept inside one): what others use cannot be deleted, by a resource group's deletion neither.
/// Resources deleted on their own (`deleted`) are left out: a write referring to one while its
/// deletion runs is not refused.
fn check_nothing_dangles(ids: &BTreeSet<String>, deleted: &[String], id: &str, body: &Value) {
    let mut references = Vec::new();
    references_of(body, &mut references);
    for (property, target) in references {
        let Some(text) = target.as_str() else {
            continue;
        };
        // Tenant-level ids (`/providers/...`) name nothing the emulator stores.
        let typed = REFERENCES.iter().any(|(name, _)| *name == property);
        if !typed
            || WEAK.contains(&property)
            || reference_problem(property, target).is_some()
            || !normal(text).starts_with("subscriptions/")
        {
            continue;
        }
        let mut candidate = normal(text);
        if deleted
            .iter()
            .any(|gone| candidate == *gone || candidate.starts_with(&format!("{gone}/")))
        {
            continue;
        }
        // Climb from a child to the document holding it, never as far as a resource group.
        let held = loop {
            if ids.contains(&candidate) {
                break true;
            }
            match candidate.rsplit_once('/') {
                Some((above, _)) if above.contains("/providers/") => candidate = above.to_owned(),
                _ => break false,
            }
        };
        assert!(held, "'{property}' of {id} refers to {text}, which is gone");
    }
}

/// Every `{"id": ...}` a document holds below its top: (the property holding it, the id). Tags
/// are skipped wherever they are, a child resource's included: a tag named `id` is no reference.
fn references_of<'a>(value: &'a Value, out: &mut Vec<(&'a str, &'a Value)>) {
    match value {
        Value::Object(object) => {
            for (key, item) in object {
                if key == "tags" {
                    continue;
                }
                let targets: Vec<&Value> = match item {
                    Value::Array(items) => items.iter().collect(),
                    other => vec![other],
                };
                for target in targets {
                    if let Some(id) = target.get("id").filter(|id| !id.is_null()) {
                        out.push((key.as_str(), id));
                    }
                }
                references_of(item, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references_of(item, out)),
        _ => {}
    }
}

/// What is wrong with a stored reference: not a fully qualified id, or an id of another type than
/// its property names.
fn reference_problem(property: &str, target: &Value) -> Option<String> {
    let Some(id) = target.as_str() else {
        return Some("which is not a string".to_owned());
    };
    let lower = id.to_ascii_lowercase();
    if !lower.starts_with("/subscriptions/") && !lower.starts_with("/providers/") {
        return Some("which is not a fully qualified resource id".to_owned());
    }
    let expected = REFERENCES
        .iter()
        .find(|(name, _)| *name == property)
        .map(|(_, segment)| *segment)?;
    let segment = id.trim_end_matches('/').rsplit('/').nth(1).unwrap_or_default();
    (!segment.eq_ignore_ascii_case(expected)).then(|| format!("which is no {expected}"))
}

/// ARM's error shape, and a message that says what is wrong with the content.
fn check_error_shape(request: &Req, reply: &Reply) {
    // The AKS resource provider answers its own errors unwrapped, with a `subcode`.
    let Some(error) = reply
        .json
        .as_ref()
        .and_then(|body| body.get("error").or_else(|| body.get("subcode").and(Some(body))))
    else {
        fail("an ARM error without {\"error\": ...}", request, reply);
    };
    let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
    if code.is_empty() {
        fail("an ARM error without a code", request, reply);
    }
    let Some(message) = error.get("message").and_then(Value::as_str) else {
        fail("an ARM error without a message", request, reply);
    };
    if message.trim().is_empty() {
        fail("an ARM error with an empty message", request, reply);
    }
    let about_content = matches!(code, "InvalidRequestContent" | "InvalidParameter");
    if reply.status == StatusCode::BAD_REQUEST
        && about_content
        && !(message.contains('\'') || message.contains("JSON"))
    {
        fail(
            "a 400 about the content that names no property and does not say what is wrong",
            request,
            reply,
        );
    }
    if reply.status == StatusCode::UNAUTHORIZED && reply.headers.get("www-authenticate").is_none() {
        fail("a 401 without a WWW-Authenticate challenge", request, reply);
    }
}

/// The child resources kept inside a document: (type, id).
fn children_of(body: &Value) -> Vec<(String, String)> {
    let Some(kind) = body.get("type").and_then(Value::as_str) else {
        return Vec::new();
    };
    EMBEDDED
        .iter()
        .filter(|(parent, _)| parent.eq_ignore_ascii_case(kind))
        .flat_map(|(parent, property)| {
            body.pointer(&format!("/properties/{property}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|child| child.get("id").and_then(Value::as_str))
                .map(move |id| (format!("{parent}/{property}"), id.to_owned()))
        })
        .collect()
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={text} is not a number")))
}

fn fresh_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

async fn run_session(seed: u64, deadline: Option<Instant>, total: &mut Stats) {
    let mut session = Session::new(seed);
    session.run(deadline).await;
    let stats = std::mem::take(&mut session.stats);
    total.sessions += 1;
    total.cases += stats.cases;
    total.checks += stats.checks;
    total.dropped += stats.dropped;
    for (status, count) in stats.statuses {
        *total.statuses.entry(status).or_default() += count;
    }
    for (code, count) in stats.codes {
        *total.codes.entry(code).or_default() += count;
    }
}

#[tokio::test]
async fn bad_input_never_breaks_the_emulator() {
    let started = Instant::now();
    let mut stats = Stats::default();
    if let Some(seed) = env_number("ARM_EMULATOR_FUZZ_SEED") {
        println!("fuzz: replaying session {seed:#018x}");
        run_session(seed, None, &mut stats).await;
    } else if let Some(seconds) = env_number("ARM_EMULATOR_FUZZ_SECONDS") {
        let mut master = Rng(fresh_seed());
        println!("fuzz: {seconds} s from seed {:#018x}", master.0);
        let deadline = started + Duration::from_secs(seconds);
        while Instant::now() < deadline {
            let seed = master.next();
            run_session(seed, Some(deadline), &mut stats).await;
        }
    } else {
        let mut master = Rng(FIXED_SEED);
        for _ in 0..SESSIONS {
            let seed = master.next();
            run_session(seed, None, &mut stats).await;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let per_second = f64::from(u32::try_from(stats.cases).unwrap_or(u32::MAX)) / elapsed.max(1e-3);
    println!(
        "fuzz: {} sessions, {} requests and {} read-backs in {elapsed:.1} s ({per_second:.0} requests/s)",
        stats.sessions, stats.cases, stats.checks
    );
    println!(
        "fuzz: statuses {:?}, {} connections dropped",
        stats.statuses, stats.dropped
    );
    let mut codes: Vec<(&String, &u64)> = stats.codes.iter().collect();
    codes.sort_by(|a, b| b.1.cmp(a.1));
    println!(
        "fuzz: most frequent error codes {:?}",
        &codes[..codes.len().min(25)]
    );
}
