//! Where requests go and what they carry besides a body: paths of every served type (and broken
//! ones), api-versions, query parameters and headers.

use std::fmt::Write as _;

use axum::http::Method;

use super::{
    ACCOUNT_NAMES, BROKEN_IDS, CHILDREN, COMPUTE, GROUPS, GUIDS, KINDS, MAINTENANCE_NAMES, NAMES, NETWORK,
    ODD_NAMES, OTHER_VERSIONS, RESOURCE_GROUPS, RESOURCES, Req, SUB, Session, TAGS, VERSION_NAMES,
    ZONE_NAMES, encode, kind_of, version_of,
};

/// Targets: where requests go.
impl Session {
    pub(super) fn subscription(&mut self) -> String {
        if self.rng.percent(97) {
            SUB.to_owned()
        } else {
            (*self.rng.pick(&[
                "99999999-0000-0000-0000-000000000000",
                "not-a-subscription",
                "00000000-0000-0000-0000-00000000000",
            ]))
            .to_owned()
        }
    }

    /// A keyword as written in the grammar, or in another case (ARM ignores case).
    pub(super) fn spell(&mut self, word: &str) -> String {
        match self.rng.below(20) {
            0 => word.to_ascii_lowercase(),
            1 => word.to_ascii_uppercase(),
            _ => word.to_owned(),
        }
    }

    pub(super) fn name(&mut self, pool: &[&str]) -> (String, bool) {
        if self.rng.percent(90) {
            return ((*self.rng.pick(pool)).to_owned(), true);
        }
        let odd = match self.rng.below(10) {
            0 => "x".repeat(81),
            1 => "y".repeat(1 + self.rng.below(6000)),
            2 => format!("{}.", self.rng.pick(pool)),
            _ => (*self.rng.pick(ODD_NAMES)).to_owned(),
        };
        (encode(&odd, "/"), false)
    }

    pub(super) fn group_name(&mut self) -> (String, bool) {
        self.name(GROUPS)
    }

    pub(super) fn group_path(&mut self) -> (String, bool) {
        let subscription = self.subscription();
        let keyword = self.spell("resourceGroups");
        let (group, plain) = self.group_name();
        (
            format!("/subscriptions/{subscription}/{keyword}/{group}"),
            plain && subscription == SUB,
        )
    }

    /// Where role assignments and definitions live: the tenant, a subscription, a group or a
    /// resource.
    pub(super) fn scope(&mut self) -> (String, bool) {
        match self.rng.below(20) {
            0..=2 => (String::new(), true),
            3..=7 => {
                let subscription = self.subscription();
                (format!("/subscriptions/{subscription}"), subscription == SUB)
            }
            8..=16 => self.group_path(),
            _ => {
                // Extension resources at a resource's scope, as role assignments on a network.
                let scoped: Vec<&str> = KINDS
                    .iter()
                    .map(|(kind, _)| *kind)
                    .filter(|kind| !kind.starts_with("Microsoft.Authorization"))
                    .collect();
                let kind = *self.rng.pick(&scoped);
                (self.fabricate(kind), true)
            }
        }
    }

    /// The path of a resource of type `kind`, and whether it was left as the grammar made it.
    pub(super) fn resource_path(&mut self, kind: &str) -> (String, bool) {
        let mut parts = kind.split('/');
        let namespace = parts.next().unwrap_or_default();
        let types: Vec<&str> = parts.collect();
        let authorization = namespace == "Microsoft.Authorization";
        let (scope, mut plain) = if authorization {
            self.scope()
        } else {
            self.group_path()
        };
        let mut path = format!("{scope}/{}/{}", self.spell("providers"), self.spell(namespace));
        for (index, segment) in types.iter().enumerate() {
            let pool = match (authorization, index) {
                (true, _) => GUIDS,
                (false, 0) => top_names(segment),
                (false, _) => child_names(segment),
            };
            let (name, plain_name) = self.name(pool);
            plain &= plain_name;
            let segment = self.spell(segment);
            let _ = write!(path, "/{segment}/{name}");
        }
        (path, plain)
    }

    /// The id of a resource of type `kind` built from the name pools; it may well exist.
    pub(super) fn fabricate(&mut self, kind: &str) -> String {
        if self.strict
            && let Some(id) = self.fabricate_under_known(kind)
        {
            return id;
        }
        let mut parts = kind.split('/');
        let namespace = parts.next().unwrap_or_default();
        let group = self.rng.pick(GROUPS);
        let mut id = format!("/subscriptions/{SUB}/resourceGroups/{group}/providers/{namespace}");
        for (index, segment) in parts.enumerate() {
            let pool = if namespace == "Microsoft.Authorization" {
                GUIDS
            } else if index == 0 {
                top_names(segment)
            } else {
                child_names(segment)
            };
            let _ = write!(id, "/{segment}/{}", self.rng.pick(pool));
        }
        id
    }

    /// An id under a group or parent known to exist; when there is none, notes what to build
    /// first.
    pub(super) fn fabricate_under_known(&mut self, kind: &str) -> Option<String> {
        let (parent_kind, segment) = kind.rsplit_once('/')?;
        let (parent_kind, pool) = if parent_kind.contains('/') {
            (kind_of(parent_kind)?, child_names(segment))
        } else if parent_kind == "Microsoft.Authorization" {
            (RESOURCE_GROUPS, GUIDS)
        } else {
            (RESOURCE_GROUPS, top_names(segment))
        };
        let parents: Vec<String> = self
            .known
            .iter()
            .filter(|(known, _)| known.eq_ignore_ascii_case(parent_kind))
            .map(|(_, id)| id.clone())
            .collect();
        let Some(parent) = parents.get(self.rng.below(parents.len())) else {
            self.missing.push(parent_kind);
            return None;
        };
        let name = self.rng.pick(pool);
        Some(if parent_kind == RESOURCE_GROUPS {
            format!("{parent}/providers/{kind}/{name}")
        } else {
            format!("{parent}/{segment}/{name}")
        })
    }

    /// A reference to a resource of type `kind`: mostly one that exists, sometimes one that may
    /// not, one of another type, or no id at all.
    pub(super) fn reference(&mut self, kind: &str) -> String {
        let roll = self.rng.below(100);
        let matching: Vec<String> = self
            .known
            .iter()
            .filter(|(known, _)| known.eq_ignore_ascii_case(kind))
            .map(|(_, id)| id.clone())
            .collect();
        if (roll < 70 || self.strict) && !matching.is_empty() {
            return self.rng.pick(&matching).clone();
        }
        if self.strict {
            if let Some(known) = kind_of(kind) {
                self.missing.push(known);
            }
            return self.fabricate(kind);
        }
        if roll < 88 {
            return self.fabricate(kind);
        }
        if roll < 95 && !self.known.is_empty() {
            return self.rng.pick(&self.known.clone()).1.clone();
        }
        (*self.rng.pick(BROKEN_IDS)).to_owned()
    }

    pub(super) fn version(&mut self, preferred: &'static str) -> &'static str {
        if self.rng.percent(80) {
            return preferred;
        }
        OTHER_VERSIONS
            .iter()
            .find(|(version, _)| *version == preferred)
            .map_or(preferred, |(_, others)| *self.rng.pick(others))
    }

    /// The query: an api-version (or a missing, unknown, garbled or doubled one) and sometimes
    /// the list parameters.
    pub(super) fn query(&mut self, version: &str) -> String {
        let mut pairs: Vec<(String, String)> = Vec::new();
        let push = |pairs: &mut Vec<(String, String)>, key: &str, value: &str| {
            pairs.push((key.to_owned(), value.to_owned()));
        };
        match self.rng.below(100) {
            0..=83 => push(&mut pairs, "api-version", version),
            84..=86 => {}
            87..=90 => {
                let unknown = *self
                    .rng
                    .pick(&["2099-01-01", "2015-01-01", "2024-05-01-preview", "latest"]);
                push(&mut pairs, "api-version", unknown);
            }
            91..=94 => {
                let garbage = match self.rng.below(6) {
                    0 => "v".repeat(3000),
                    1 => "é".to_owned(),
                    2 => " ".to_owned(),
                    3 => "2024-05-01\u{0}".to_owned(),
                    4 => format!("{version} "),
                    _ => String::new(),
                };
                push(&mut pairs, "api-version", &garbage);
            }
            95..=97 => {
                push(&mut pairs, "api-version", "2099-01-01");
                push(&mut pairs, "api-version", version);
            }
            _ => push(&mut pairs, "API-VERSION", version),
        }
        if self.rng.percent(8) {
            let token = *self.rng.pick(&[
                "0",
                "1",
                "2",
                "-1",
                "18446744073709551615",
                "99999999999999999999999",
                "x",
            ]);
            push(&mut pairs, "$skiptoken", token);
        }
        if self.rng.percent(6) {
            let filter = *self.rng.pick(&[
                "location eq 'westeurope'",
                "location eq 'WestUS2'",
                "location eq ''",
                "location eq",
                "name eq 'x'",
                "atScope()",
                "principalId eq '5a0b6c8e-0000-4000-8000-00000000f022'",
                "'",
            ]);
            push(&mut pairs, "$filter", filter);
        }
        if self.rng.percent(5) {
            let expand = *self.rng.pick(&["instanceView", "INSTANCEVIEW", "userData", "x"]);
            push(&mut pairs, "$expand", expand);
        }
        let mut query: Vec<String> = pairs
            .iter()
            .map(|(key, value)| format!("{}={}", encode(key, ""), encode(value, "")))
            .collect();
        if self.rng.percent(3) {
            query.push((*self.rng.pick(&["", "=", "&", "a", "%", "%ZZ=1", "api-version"])).to_owned());
        }
        query.join("&")
    }

    /// A request to a resource group, or the list of them.
    pub(super) fn group_request(&mut self) -> Req {
        let version = self.version(RESOURCES);
        let query = self.query(version);
        if self.rng.percent(15) {
            let subscription = self.subscription();
            let keyword = self.spell("resourcegroups");
            let method = self.method(&[(Method::GET, 90), (Method::POST, 5), (Method::PUT, 5)]);
            return Req::new(method, format!("/subscriptions/{subscription}/{keyword}"), query);
        }
        let (path, plain) = self.group_path();
        let method = self.method(&[
            (Method::PUT, 40),
            (Method::GET, 20),
            (Method::HEAD, 8),
            (Method::PATCH, 10),
            (Method::DELETE, 6),
            (Method::POST, 5),
        ]);
        let mut request = Req::new(method, path, query);
        if plain {
            request.kind = Some(RESOURCE_GROUPS);
        }
        request
    }

    pub(super) fn method(&mut self, weights: &[(Method, usize)]) -> Method {
        let total: usize = weights.iter().map(|(_, weight)| weight).sum();
        let mut roll = self.rng.below(total + 2);
        for (method, weight) in weights {
            if roll < *weight {
                return method.clone();
            }
            roll -= weight;
        }
        if roll == 0 {
            Method::OPTIONS
        } else {
            Method::from_bytes(b"FROB").unwrap()
        }
    }

    /// A request to a stored resource: made from the grammar, or to one seen before.
    pub(super) fn resource_request(&mut self) -> Req {
        let method = self.method(&[
            (Method::PUT, 45),
            (Method::GET, 20),
            (Method::PATCH, 10),
            (Method::DELETE, 15),
            (Method::HEAD, 3),
            (Method::POST, 3),
        ]);
        let known = self.known.clone();
        let (kind, path, plain) = if self.rng.percent(20) && !known.is_empty() {
            let (kind, id) = self.rng.pick(&known);
            match kind_of(kind) {
                Some(kind) => (kind, encode(id, "/"), true),
                None => (RESOURCE_GROUPS, encode(id, "/"), true),
            }
        } else {
            let kind = self.rng.pick(KINDS).0;
            let (path, plain) = self.resource_path(kind);
            (kind, path, plain)
        };
        let version = self.version(version_of(kind));
        let query = self.query(version);
        let mut request = Req::new(method, path, query);
        if plain {
            request.kind = Some(kind);
        }
        request
    }

    /// A list: of a group's or a subscription's resources of a type, or of a parent's children.
    pub(super) fn collection_request(&mut self) -> Req {
        let kind = self.rng.pick(KINDS).0;
        let (path, _) = self.resource_path(kind);
        let mut cut: Vec<&str> = path.split('/').collect();
        cut.pop();
        let mut path = cut.join("/");
        if self.rng.percent(25) && !kind.starts_with("Microsoft.Authorization") {
            // The same list over the whole subscription.
            let parts: Vec<&str> = path.split('/').collect();
            if let Some(at) = parts
                .iter()
                .position(|part| part.eq_ignore_ascii_case("providers"))
            {
                path = format!("/subscriptions/{SUB}/{}", parts[at..].join("/"));
            }
        }
        let version = self.version(version_of(kind));
        let query = self.query(version);
        let method = self.method(&[(Method::GET, 90), (Method::PUT, 4), (Method::DELETE, 4)]);
        Req::new(method, path, query)
    }

    /// A read of a catalogue: resource SKUs, marketplace, community and shared gallery images, a
    /// machine's instance view.
    pub(super) fn catalogue_request(&mut self) -> Req {
        let subscription = self.subscription();
        let location = *self.rng.pick(&["westeurope", "westus2", "WestEurope", "nowhere"]);
        let (path, version) = match self.rng.below(5) {
            3 => {
                // A gallery the fuzzer made, by its unique name (shared when it shares with groups).
                let gallery = *self.rng.pick(&["ONE", "TWO", "nope"]);
                let mut path = format!(
                    "/subscriptions/{subscription}/providers/Microsoft.Compute/locations/{location}/sharedGalleries/{SUB}-{gallery}/images/{}/versions",
                    self.rng.pick(CHILDREN)
                );
                if self.rng.percent(60) {
                    let _ = write!(path, "/{}", self.rng.pick(VERSION_NAMES));
                }
                (path, *self.rng.pick(&["2024-03-03", "2026-03-03", COMPUTE]))
            }
            0 => (
                format!("/subscriptions/{subscription}/providers/Microsoft.Compute/skus"),
                *self.rng.pick(&["2021-07-01", "2019-04-01", "2024-07-01"]),
            ),
            1 => {
                let (publisher, offer, sku) = *self.rng.pick(&[
                    ("cncf-upstream", "capi", "ubuntu-2204-gen1"),
                    ("Canonical", "ubuntu-24_04-lts", "server"),
                    ("cncf-upstream", "capi-windows", "windows-2019-containerd-gen1"),
                    ("nope", "capi", "ubuntu-2204-gen1"),
                ]);
                let kind = *self.rng.pick(&["vmimage", "VMImage", "other"]);
                let mut path = format!(
                    "/subscriptions/{subscription}/providers/Microsoft.Compute/locations/{location}/publishers/{publisher}/artifacttypes/{kind}/offers/{offer}/skus/{sku}/versions"
                );
                if self.rng.percent(60) {
                    let version = *self.rng.pick(&["latest", "130.3.20240717", "1.0.0", "..", "x"]);
                    let _ = write!(path, "/{version}");
                }
                (path, COMPUTE)
            }
            2 => {
                let image = *self
                    .rng
                    .pick(&["capi-ubun2-2404", "capi-win-2022-containerd", "nope"]);
                let mut path = format!(
                    "/subscriptions/{subscription}/providers/Microsoft.Compute/locations/{location}/communityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/images/{image}/versions"
                );
                if self.rng.percent(60) {
                    let version = *self.rng.pick(&["latest", "1.33.5", "1.99.0", "x"]);
                    let _ = write!(path, "/{version}");
                }
                (path, *self.rng.pick(&["2022-03-03", "2024-03-03", COMPUTE]))
            }
            _ => {
                let (group, _) = self.group_path();
                let (name, _) = self.name(NAMES);
                (
                    format!("{group}/providers/Microsoft.Compute/virtualMachines/{name}/instanceView"),
                    COMPUTE,
                )
            }
        };
        let query = self.query(version);
        let method = self.method(&[(Method::GET, 92), (Method::PUT, 3), (Method::DELETE, 3)]);
        Req::new(method, path, query)
    }

    /// Tags at a scope (the subscription, a group, a resource), or a generic list of resources,
    /// with or without a `$filter`.
    pub(super) fn tags_or_list_request(&mut self) -> Req {
        let version = self.version(RESOURCES);
        let mut query = self.query(version);
        if self.rng.percent(40) {
            let path = if self.rng.percent(50) {
                format!("/subscriptions/{}/resources", self.subscription())
            } else {
                format!("{}/resources", self.group_path().0)
            };
            if self.rng.percent(60) {
                let filter = *self.rng.pick(&[
                    "resourceType eq 'Microsoft.Network/virtualNetworks'",
                    "tagName eq 'fuzz' and tagValue eq 'yes'",
                    "substringof('one', name)",
                    "location eq 'westeurope' and resourceGroup eq 'fz'",
                    "name gt 'a'",
                    "resourceType eq 'unterminated",
                ]);
                let encoded: String = form_urlencoded::byte_serialize(filter.as_bytes()).collect();
                let _ = write!(query, "&$filter={encoded}");
            }
            let method = self.method(&[(Method::GET, 95), (Method::PUT, 5)]);
            return Req::new(method, path, query);
        }
        let scope = match self.rng.below(4) {
            0 => format!("/subscriptions/{}", self.subscription()),
            1 => self.group_path().0,
            _ => {
                let kind = self.rng.pick(KINDS).0;
                if kind.starts_with("Microsoft.Authorization") {
                    self.group_path().0
                } else {
                    self.reference(kind)
                }
            }
        };
        let method = self.method(&[
            (Method::GET, 35),
            (Method::PUT, 25),
            (Method::PATCH, 30),
            (Method::DELETE, 10),
        ]);
        let mut request = Req::new(
            method,
            format!("{scope}/providers/Microsoft.Resources/tags/default"),
            query,
        );
        request.kind = Some(TAGS);
        request
    }

    /// A poll of an operation whose id is made up or garbled.
    pub(super) fn operation_request(&mut self) -> Req {
        let id = *self
            .rng
            .pick(&["0f8fad5b-d9cb-469f-a165-70867728950e", "x", "..", "%ZZ"]);
        let path = match self.rng.below(3) {
            0 => format!("/subscriptions/{SUB}/operationresults/{id}"),
            1 => {
                let namespace = *self
                    .rng
                    .pick(&["Microsoft.Network", "Microsoft.Compute", "Microsoft.Nope"]);
                let kind = *self.rng.pick(&[
                    "operations",
                    "operationResults",
                    "DiskOperations",
                    "asyncoperations",
                ]);
                format!("/subscriptions/{SUB}/providers/{namespace}/locations/westeurope/{kind}/{id}")
            }
            _ => format!("/providers/Microsoft.Network/locations/westeurope/operations/{id}"),
        };
        let version = *self.rng.pick(&[RESOURCES, NETWORK, "2099-01-01"]);
        let query = self.query(version);
        Req::new(Method::GET, path, query)
    }

    /// A path made of ARM words in any order, to exercise the parsing of paths.
    pub(super) fn odd_request(&mut self) -> Req {
        const WORDS: &[&str] = &[
            "subscriptions",
            SUB,
            "resourceGroups",
            "fz",
            "providers",
            "Microsoft.Network",
            "Microsoft.Compute",
            "Microsoft.Authorization",
            "virtualNetworks",
            "subnets",
            "a",
            "c",
            "locations",
            "westeurope",
            "operations",
            "operationresults",
            "skus",
            "roleAssignments",
            "",
            "..",
            "_emulator",
        ];
        let count = 1 + self.rng.below(9);
        let mut path = String::new();
        for _ in 0..count {
            path.push('/');
            let word = *self.rng.pick(WORDS);
            path.push_str(word);
        }
        if self.rng.percent(10) {
            path.push('/');
        }
        let version = *self.rng.pick(&[NETWORK, RESOURCES, COMPUTE]);
        let query = self.query(version);
        let method = self.method(&[
            (Method::GET, 40),
            (Method::PUT, 30),
            (Method::DELETE, 15),
            (Method::PATCH, 10),
        ]);
        Req::new(method, path, query)
    }

    /// The headers: mostly a valid token, sometimes none or a bad one; preconditions; odd values.
    pub(super) fn headers(&mut self, request: &mut Req) {
        let token = self.token.clone();
        let authorization: Option<Vec<u8>> = if self.rng.percent(94) {
            Some(format!("Bearer {token}").into_bytes())
        } else {
            match self.rng.below(9) {
                0 => None,
                1 => Some(b"Bearer".to_vec()),
                2 => Some(b"Bearer ".to_vec()),
                3 => Some(format!("bearer {token}").into_bytes()),
                4 => Some(b"Basic dXNlcjpwYXNz".to_vec()),
                5 => Some(b"Bearer x.y.z".to_vec()),
                6 => {
                    let mut broken = format!("Bearer {token}").into_bytes();
                    let at = self.rng.below(broken.len());
                    broken[at] = b'A' + u8::try_from(self.rng.below(26)).unwrap();
                    Some(broken)
                }
                7 => Some([b"Bearer ".as_slice(), &[0xff, 0xfe]].concat()),
                _ => {
                    let expired = self.expired.clone();
                    Some(match expired.get(self.rng.below(expired.len())) {
                        Some(old) => format!("Bearer {old}").into_bytes(),
                        None => b"Bearer eyJhbGciOiJub25lIn0.e30.".to_vec(),
                    })
                }
            }
        };
        if let Some(authorization) = authorization {
            request.headers.push(("authorization", authorization));
        }
        if self.rng.percent(95) {
            request
                .headers
                .push(("content-type", b"application/json".to_vec()));
        } else {
            let odd: [&[u8]; 3] = [b"text/plain", b"", b"application/json; charset=latin1"];
            let odd = self.rng.pick(&odd).to_vec();
            request.headers.push(("content-type", odd));
        }
        if self.rng.percent(8) {
            let etags = self.etags.clone();
            let value = match self.rng.below(6) {
                0 => b"*".to_vec(),
                1 => b"\"nope\"".to_vec(),
                2 => Vec::new(),
                3 => vec![0xff],
                _ => etags
                    .get(self.rng.below(etags.len()))
                    .map_or_else(|| b"W/\"x\"".to_vec(), |etag| etag.clone().into_bytes()),
            };
            request.headers.push(("if-match", value));
        }
        if self.rng.percent(3) {
            let values: [&[u8]; 3] = [b"*", b"\"x\"", b""];
            let value = self.rng.pick(&values).to_vec();
            request.headers.push(("if-none-match", value));
        }
        if self.rng.percent(3) {
            let values: [&[u8]; 3] = [b"not-a-guid", b"", &[0xc3, 0x28]];
            let value = self.rng.pick(&values).to_vec();
            request.headers.push(("x-ms-correlation-request-id", value));
        }
    }
}

/// The names of a child resource type (its last type segment).
fn child_names(segment: &str) -> &'static [&'static str] {
    if segment.eq_ignore_ascii_case("maintenanceConfigurations") {
        MAINTENANCE_NAMES
    } else if segment == "versions" {
        VERSION_NAMES
    } else {
        CHILDREN
    }
}

/// The names of a top-level resource type (its first type segment).
fn top_names(segment: &str) -> &'static [&'static str] {
    if segment.eq_ignore_ascii_case("privateDnsZones") {
        ZONE_NAMES
    } else if segment.eq_ignore_ascii_case("storageAccounts") {
        ACCOUNT_NAMES
    } else {
        NAMES
    }
}
