//! The resource types the emulator serves. Each is a [`ResourceType`]: how ARM stores, creates and
//! deletes it, and one `prepare` routine turning a request body into the document Azure would
//! store (validation, defaults, read-only properties). The generic protocol lives in
//! [`crate::engine`]; a family module only describes its types.

pub(crate) mod authorization;
mod compute;
mod container_service;
pub(crate) mod embedded;
pub(crate) mod fields;
mod identity;
pub(crate) mod names;
mod network;
mod resource_health;
mod storage;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::config::Config;
use crate::error::ArmError;
use crate::path::ResourceId;
use crate::state::{State, StatusStyle};

/// A resource type and how ARM treats it.
#[derive(Debug)]
pub(crate) struct ResourceType {
    /// The full type in its canonical casing, for example `Microsoft.Network/virtualNetworks`.
    pub(crate) name: &'static str,
    pub(crate) api_versions: &'static [&'static str],
    pub(crate) storage: Storage,
    pub(crate) location: Locality,
    /// How a PUT answers.
    pub(crate) put: Lro,
    /// How a DELETE answers.
    pub(crate) delete: Lro,
    /// Whether a synchronous DELETE answers with what it removed (Microsoft.Authorization does;
    /// other providers answer an empty 200).
    pub(crate) delete_echoes: bool,
    pub(crate) flavour: &'static Flavour,
    /// The error code for deleting it while another resource refers to it.
    pub(crate) in_use_code: &'static str,
    /// Back-references Azure shows on it: properties listing the resources that refer to it.
    pub(crate) back_references: &'static [BackReference],
    /// Validates a request body and completes it into the stored document.
    pub(crate) prepare: fn(&mut Prepare<'_>) -> Result<(), ArmError>,
    /// Completes the document once its embedded children are built (cross-references between
    /// children).
    pub(crate) finish: fn(&mut Value),
    /// Properties that first appear in a later api-version: (dotted path under `properties`, or
    /// from the document's root when it starts with `/`; first api-version). Answers for older
    /// api-versions leave them out.
    pub(crate) since: &'static [(&'static str, &'static str)],
    /// Properties that a later api-version replaced: (dotted path under `properties`, first
    /// api-version without it).
    pub(crate) until: &'static [(&'static str, &'static str)],
    /// Properties Azure only shows once provisioning has finished (allocated addresses, the OS
    /// disk of a virtual machine): dotted paths under `properties` (from the root when they
    /// start with `/`).
    pub(crate) shown_when_provisioned: &'static [&'static str],
    /// The names it accepts.
    pub(crate) naming: &'static names::Naming,
    /// Whether what it refers to may be deleted under it (a peering's remote network, a DNS
    /// zone's linked network): Azure then shows the reference as disconnected instead of
    /// refusing the deletion.
    pub(crate) weak_references: bool,
    /// What `POST {resource}/{action}` does, by action name.
    pub(crate) actions: &'static [Action],
    /// What the type adds to the generic protocol.
    pub(crate) hooks: Hooks,
}

/// A `POST {resource}/{name}` a type answers (`deleteInstances`, `listClusterAdminCredential`).
#[derive(Debug)]
pub(crate) struct Action {
    pub(crate) name: &'static str,
    pub(crate) run: fn(&mut Act<'_>) -> Result<Acted, ArmError>,
}

/// What an action works on.
pub(crate) struct Act<'a> {
    /// The resource acted on, as stored (canonical casing).
    pub(crate) id: &'a ResourceId,
    /// Its stored document, which the action may change.
    pub(crate) doc: Value,
    /// The request body (`null` when empty).
    pub(crate) body: Value,
    /// The request's query parameters.
    pub(crate) query: &'a [(String, String)],
    pub(crate) state: &'a State,
    /// Other documents the action creates or changes, stored with the resource.
    pub(crate) companions: Vec<Value>,
    /// How the action's operation ends when it does not succeed.
    pub(crate) failure: Option<ArmError>,
}

impl Act<'_> {
    /// A query parameter, ignoring the case of its name.
    pub(crate) fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// How an action answers.
pub(crate) enum Acted {
    /// 200 with this body, the resource unchanged (AKS's credential listings).
    Answered(Value),
    /// 202 with the operation's URLs: the changed document is stored, and an operation runs on
    /// the resource until its latency has passed.
    Started,
}

/// Lists a type at a scope: the keys of what to show there, given the request's `$filter`.
pub(crate) type Lister = fn(&State, &str, Option<&str>) -> Result<Vec<String>, ArmError>;

/// Refuses a deletion, given the stored key of what is deleted.
pub(crate) type Deletable = fn(&State, &str) -> Result<(), ArmError>;

/// Optional behaviour of a type beyond the generic protocol.
#[derive(Debug)]
pub(crate) struct Hooks {
    /// Secrets: properties (dotted paths under `properties`, from the root when they start with
    /// `/`) that are stored but never answered.
    pub(crate) secrets: &'static [&'static str],
    /// The error a read of a missing resource gets, for providers that word it themselves.
    pub(crate) not_found: Option<fn(&ResourceId) -> ArmError>,
    /// The error for deleting it (its id) while `holder` refers to it, for providers that do not
    /// answer the generic 400 with `in_use_code`.
    pub(crate) in_use: Option<fn(&str, &str) -> ArmError>,
    /// Runs when a delete completes, with the removed document (what the deletion takes along
    /// or releases).
    pub(crate) on_deleted: Option<fn(&mut State, &Value)>,
    /// What a read with `$expand` adds to the properties (a machine's instance view, a gallery
    /// image version's replication status).
    pub(crate) expand: Option<Expansion>,
    /// Adjusts the `properties` a create answers, for what a provider fills in only after
    /// answering.
    pub(crate) create_answer: Option<fn(&mut Value)>,
    /// Lists the type at a scope (the ids to show), for providers that show more than what is
    /// stored under it, given the request's `$filter`.
    pub(crate) list: Option<Lister>,
    /// Whether a stored document belongs to Azure rather than to the subscription (built-in role
    /// definitions): no client may replace, change or delete it.
    pub(crate) built_in: Option<fn(&Value) -> bool>,
    /// Completes an answer with what Azure derives from other resources when it is read (a
    /// peering's state, a zone's record counts).
    pub(crate) render: Option<fn(&State, &mut Value)>,
    /// Refuses a deletion the provider refuses (a DNS zone that still has links), given the
    /// stored key.
    pub(crate) deletable: Option<Deletable>,
    /// Runs when an operation on a stored document ends (its key, whether it succeeded): what
    /// the operation did to other documents settles with it (a scale set's instances).
    pub(crate) on_settled: Option<fn(&mut State, &str, bool)>,
    /// The documents that go with a resource when it is deleted (given its key), whose
    /// references to it do not keep it from being deleted.
    pub(crate) members: Option<fn(&State, &str) -> Vec<String>>,
}

/// A property a read adds when its `$expand` names it.
#[derive(Debug)]
pub(crate) struct Expansion {
    /// The `$expand` value (any case).
    pub(crate) name: &'static str,
    /// The property added under `properties`.
    pub(crate) property: &'static str,
    /// The property's value, from the stored document.
    pub(crate) view: fn(&State, &Value) -> Value,
}

impl Expansion {
    /// `$expand=instanceView`.
    pub(crate) const fn instance_view(view: fn(&State, &Value) -> Value) -> Self {
        Self {
            name: "instanceView",
            property: "instanceView",
            view,
        }
    }
}

/// A type without optional behaviour.
pub(crate) const NO_HOOKS: Hooks = Hooks {
    secrets: &[],
    not_found: None,
    in_use: None,
    on_deleted: None,
    expand: None,
    create_answer: None,
    list: None,
    built_in: None,
    render: None,
    deletable: None,
    on_settled: None,
    members: None,
};

/// A `finish` that changes nothing.
pub(crate) fn unchanged(_: &mut Value) {}

impl ResourceType {
    /// A top-level, regional type with asynchronous writes and nothing special; families adjust
    /// the rest with struct update syntax.
    pub(crate) const fn new(
        name: &'static str,
        api_versions: &'static [&'static str],
        flavour: &'static Flavour,
        prepare: fn(&mut Prepare<'_>) -> Result<(), ArmError>,
    ) -> Self {
        Self {
            name,
            api_versions,
            storage: Storage::Document,
            location: Locality::Regional,
            put: Lro::Async,
            delete: Lro::Async,
            delete_echoes: false,
            flavour,
            in_use_code: "InUseResourceCannotBeDeleted",
            back_references: &[],
            prepare,
            finish: unchanged,
            since: &[],
            until: &[],
            shown_when_provisioned: &[],
            naming: &names::ANY,
            weak_references: false,
            actions: &[],
            hooks: NO_HOOKS,
        }
    }
}

/// Where a resource's document lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Storage {
    /// A document of its own.
    Document,
    /// An element of an array property of its parent's document, as network child resources
    /// (subnets, security rules, routes, load balancer parts) are: they share the parent's etag
    /// and a PUT of the parent replaces them.
    Embedded { property: &'static str },
}

/// Whether a resource has a location of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Locality {
    /// Required, one of the configured locations.
    Regional,
    /// Child resources: the parent's.
    Inherited,
    /// Required and always `global` (private DNS zones and their links).
    Global,
}

/// How a write answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lro {
    /// Done when answered: 200/201 (PUT), 200/204 (DELETE).
    Sync,
    /// PUT: 200/201 with the body in progress and `Azure-AsyncOperation`. DELETE: 202 with
    /// `Azure-AsyncOperation`, `Location` and `Retry-After`.
    Async,
    /// PUT: 202 with `Azure-AsyncOperation` and `Location`, the body echoing the request (managed
    /// disks).
    Accepted,
    /// PUT: 202 with `Azure-AsyncOperation` and `Location` and an empty object (private DNS).
    AcceptedEmpty,
    /// PUT: 202 with no body and only `Location`, whose poll answers the resource at the end
    /// (storage accounts).
    AcceptedBare,
}

/// What differs between resource providers in the long-running-operation protocol.
#[derive(Debug)]
pub(crate) struct Flavour {
    pub(crate) status: StatusStyle,
    /// The provisioning state a new resource shows while it is created.
    pub(crate) creating: &'static str,
    /// The provisioning state an updated resource shows in the answer to its PUT.
    pub(crate) updating: &'static str,
    /// The path segment of the status URL (`operations`, `DiskOperations`).
    pub(crate) status_segment: &'static str,
    /// Where the operation URLs live.
    pub(crate) operations: OperationsAt,
    /// Whether resources carry an `etag` (Microsoft.Network's do), and its form.
    pub(crate) etag: Option<EtagStyle>,
    /// Whether documents show `properties.provisioningState` (availability sets do not).
    pub(crate) provisioning_state: bool,
    /// What a PUT creating a resource answers unless it is accepted for later (201; availability
    /// sets answer 200).
    pub(crate) create_status: StatusCode,
    pub(crate) back_references: BackReferenceStyle,
    /// Whether a write that changes nothing but tags is done when answered (Microsoft.Network
    /// answers it `Succeeded`; its operation ends at once).
    pub(crate) settles_unchanged: bool,
    pub(crate) concurrency: Concurrency,
}

/// Where a provider's operation URLs live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OperationsAt {
    /// `/subscriptions/{id}/providers/{ns}/locations/{location}/{status segment|result}/{op}`, with
    /// `result` the segment of the `Location` URL (`operationResults`; storage: `asyncoperations`).
    Location { result: &'static str },
    /// `{resource group}/providers/{ns}/{status segment}/{op}`, with `result` the segment of the
    /// `Location` URL (private DNS: `privateDnsOperationStatuses`, `privateDnsOperationResults`).
    ResourceGroup { result: &'static str },
}

/// How a provider writes its etags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EtagStyle {
    /// `W/"<uuid>"` (Microsoft.Network).
    Weak,
    /// `<uuid>` (private DNS zones and record sets).
    Bare,
    /// `"<uuid>"` (private DNS virtual network links).
    Quoted,
}

/// What a write or delete gets when it meets an operation still running on the same resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Concurrency {
    /// 409 `AnotherOperationInProgress`, naming the running operation; a document and the
    /// children kept inside it count as one (Microsoft.Network).
    Refused,
    /// The later write or delete takes over and the earlier operation ends `Canceled`
    /// (`OperationPreempted`); only a delete may meet a deletion, a write gets 409
    /// `OperationNotAllowed` (virtual machines and their extensions).
    Preempted,
    /// 409 `Conflict` (managed disks, and providers that never leave an operation running).
    Conflict,
    /// 409 `OperationNotAllowed` while any operation runs on the resource's top-level resource
    /// or anything under it; deletes go ahead (managed clusters and their agent pools).
    Busy,
}

/// How a provider shows back-references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackReferenceStyle {
    /// In every answer, left out while nothing refers (Microsoft.Network).
    WhenPresent,
    /// In reads only, as a list even when empty (Microsoft.Compute).
    OnReads,
}

/// Resource providers that finish every write before answering.
pub(crate) static SYNCHRONOUS: Flavour = Flavour {
    status: StatusStyle::Plain,
    creating: "Succeeded",
    updating: "Succeeded",
    status_segment: "operations",
    operations: OperationsAt::Location {
        result: "operationResults",
    },
    etag: None,
    provisioning_state: false,
    create_status: StatusCode::CREATED,
    back_references: BackReferenceStyle::WhenPresent,
    settles_unchanged: false,
    concurrency: Concurrency::Conflict,
};

/// A property Azure fills with the resources referring to this one.
#[derive(Debug)]
pub(crate) struct BackReference {
    /// The property, for example `ipConfigurations` on a subnet.
    pub(crate) property: &'static str,
    /// The types of the referring objects (the innermost object with an `id` holding the
    /// reference).
    pub(crate) from: &'static [&'static str],
    /// Whether the property holds one reference or a list.
    pub(crate) many: bool,
}

/// What a `prepare` routine works on.
pub(crate) struct Prepare<'a> {
    /// The canonical id of the resource.
    pub(crate) id: &'a ResourceId,
    /// The document being built, starting as the request body.
    pub(crate) doc: Map<String, Value>,
    /// The stored document it replaces.
    pub(crate) existing: Option<&'a Value>,
    pub(crate) state: &'a State,
    pub(crate) config: &'a Config,
    /// The resource's location (the parent's for child resources).
    pub(crate) location: &'a str,
    /// The provisioning state the resource will show in the answer.
    pub(crate) provisioning_state: &'a str,
    /// The object id of the principal writing it; `None` when the emulator seeds it.
    pub(crate) caller: Option<&'a str>,
    /// Other documents the write creates or changes (a virtual machine's disks), each with its
    /// `id` and `type`; stored with the resource once every check has passed.
    pub(crate) companions: Vec<Value>,
    /// How the write's operation ends when Azure accepts the write but cannot carry it out (no
    /// capacity left in a zone).
    pub(crate) failure: Option<ArmError>,
    /// Documents the enclosing write built before this one and stores with it (a managed
    /// cluster's new network, which its scale sets' instances take addresses from).
    pub(crate) staged: &'a [Value],
    /// A more specific state than `updating` that the resource shows while the write runs
    /// (AKS: `Upgrading`, `Scaling`).
    pub(crate) reported_state: Option<&'static str>,
}

impl Prepare<'_> {
    /// The `properties` object, created when absent.
    ///
    /// # Errors
    /// When the request's `properties` is not an object.
    pub(crate) fn properties(&mut self) -> Result<&mut Map<String, Value>, ArmError> {
        let properties = self
            .doc
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if properties.is_null() {
            *properties = Value::Object(Map::new());
        }
        properties
            .as_object_mut()
            .ok_or_else(|| fields::wrong_type("properties", "an object"))
    }

    /// Sets a property unless the request set it.
    pub(crate) fn default(&mut self, name: &str, value: Value) -> Result<(), ArmError> {
        let properties = self.properties()?;
        if properties.get(name).is_none_or(Value::is_null) {
            properties.insert(name.to_owned(), value);
        }
        Ok(())
    }

    /// Keeps a read-only property of the stored document (or makes it with `make` on create).
    pub(crate) fn keep(&mut self, name: &str, make: impl FnOnce() -> Value) -> Result<(), ArmError> {
        let kept = self
            .existing
            .and_then(|existing| existing.get("properties")?.get(name))
            .cloned()
            .unwrap_or_else(make);
        self.properties()?.insert(name.to_owned(), kept);
        Ok(())
    }
}

/// Properties whose `{"id": ...}` names a resource of one type, by the last segment of that type
/// (a subnet's `routeTable` names a `routeTables`). Arrays of references count element by element.
pub(crate) const REFERENCE_TYPES: &[(&str, &str)] = &[
    ("subnet", "subnets"),
    ("remoteVirtualNetwork", "virtualNetworks"),
    ("virtualNetwork", "virtualNetworks"),
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
    ("loadBalancerFrontendIpConfigurations", "frontendIPConfigurations"),
    ("probe", "probes"),
    ("networkInterfaces", "networkInterfaces"),
    ("availabilitySet", "availabilitySets"),
    ("managedDisk", "disks"),
];

/// Every type served.
fn registry() -> impl Iterator<Item = &'static ResourceType> {
    network::TYPES
        .iter()
        .chain(identity::TYPES)
        .chain(authorization::TYPES)
        .chain(compute::TYPES)
        .chain(storage::TYPES)
        .chain(container_service::TYPES)
        .copied()
}

/// A read-only type answered by functions instead of the store: resource SKUs, marketplace and
/// community gallery images, a virtual machine's instance view.
#[derive(Debug)]
pub(crate) struct Catalogue {
    /// The full type as paths name it, for example `Microsoft.Compute/skus`.
    pub(crate) name: &'static str,
    pub(crate) api_versions: &'static [&'static str],
    /// What a GET of one entry answers; `None` when entries have no path of their own.
    pub(crate) entry: Option<Answer>,
    /// What a GET of the collection path answers: the list, or a view such as `instanceView`.
    pub(crate) collection: Option<Answer>,
}

/// How a catalogue answers a GET.
pub(crate) type Answer = fn(&Lookup<'_>) -> Result<Value, ArmError>;

/// What a catalogue answers from.
pub(crate) struct Lookup<'a> {
    pub(crate) id: &'a ResourceId,
    pub(crate) config: &'a Config,
    pub(crate) state: &'a State,
    /// The `$filter` of the request.
    pub(crate) filter: Option<&'a str>,
}

/// Whether the store keeps documents of this type parsed instead of as compact text: some reads
/// scan every document of these types (role assignments on every call under RBAC, public
/// addresses when one is allocated) or read one on every call (the resource group), and a
/// cluster has few of them.
pub(crate) fn kept_parsed(type_name: &str) -> bool {
    type_name == crate::resource_groups::TYPE
        || [
            &authorization::ROLE_ASSIGNMENT,
            &authorization::ROLE_DEFINITION,
            &identity::USER_ASSIGNED_IDENTITY,
        ]
        .into_iter()
        .chain(network::SCANNED.iter().copied())
        .any(|resource_type| resource_type.name == type_name)
}

/// The catalogue of a full type name, ignoring case.
pub(crate) fn catalogue(type_name: &str) -> Option<&'static Catalogue> {
    compute::CATALOGUES
        .iter()
        .chain(container_service::CATALOGUES)
        .copied()
        .chain([&resource_health::AVAILABILITY_STATUSES])
        .find(|catalogue| catalogue.name.eq_ignore_ascii_case(type_name))
}

/// The type of a full type name, ignoring case.
pub(crate) fn find(type_name: &str) -> Option<&'static ResourceType> {
    registry().find(|resource_type| resource_type.name.eq_ignore_ascii_case(type_name))
}

/// The action a collection path names (`.../virtualMachineScaleSets/deleteInstances`): the type
/// acted on and its action, ignoring case.
pub(crate) fn action(type_name: &str) -> Option<(&'static ResourceType, &'static Action)> {
    let (on, name) = type_name.rsplit_once('/')?;
    let resource_type = find(on)?;
    let action = resource_type
        .actions
        .iter()
        .find(|action| action.name.eq_ignore_ascii_case(name))?;
    Some((resource_type, action))
}

/// Whether documents of a type are machines that boot from their custom data (virtual machines
/// and Uniform scale set instances).
pub(crate) fn boots(type_name: &str) -> bool {
    compute::boots(type_name)
}

/// A booting machine's power state, as its instance view reports it (`running`, `stopped`, …).
pub(crate) fn power_state(machine: &Value) -> &'static str {
    compute::power_state(machine)
}

/// The private IPv4 addresses of a booting machine's network interfaces, primary first.
pub(crate) fn private_addresses(state: &State, machine: &Value) -> Vec<String> {
    compute::private_addresses(state, machine)
}

/// The managed clusters a stand-in for their Kubernetes serves (those not stopped), with their
/// nodes and how their API servers sign callers in; with `reveal`, each with its certificate
/// authority.
pub(crate) fn managed_clusters(state: &State, config: &crate::config::Config, reveal: bool) -> Vec<Value> {
    container_service::managed_clusters(state, config, reveal)
}

/// Whether `host` (a name or an address, any case) is one the emulator hands out, as a client in
/// `from` (a virtual network's lower-case id) would reach it: the address or DNS name of a public
/// IP address, the private address of a load balancer's frontend, one of a managed cluster's API
/// server names, or a name of a private DNS zone. Names nothing else would resolve to outside
/// Azure. A client in no network reaches every private frontend and no private zone; a client in
/// a network reaches a private address only in that network or one peered with it, and resolves
/// a private zone's names only when the zone is linked to its network.
pub(crate) fn resolves(state: &State, host: &str, from: Option<&str>) -> bool {
    let host = host.trim_end_matches('.');
    let address: Option<std::net::IpAddr> = host.parse().ok();
    let reached =
        |address: std::net::IpAddr| from.is_none_or(|network| network::reaches(state, network, address));
    if let (Some(network), None) = (from, address) {
        let name = host.to_ascii_lowercase();
        if network::addresses_from(state, network, &name)
            .into_iter()
            .any(reached)
        {
            return true;
        }
    }
    let names_host = |value: Option<&Value>| {
        value.and_then(Value::as_str).is_some_and(|value| match address {
            Some(address) => value.parse() == Ok(address),
            None => value.trim_end_matches('.').eq_ignore_ascii_case(host),
        })
    };
    state.resources.values().any(|stored| {
        let pointers: &[&str] = if stored.type_name == network::PUBLIC_IP.name {
            &["/properties/ipAddress", "/properties/dnsSettings/fqdn"]
        } else if stored.type_name == network::LOAD_BALANCER.name {
            let body = stored.body();
            return address.is_some_and(reached)
                && body
                    .pointer("/properties/frontendIPConfigurations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|frontend| names_host(frontend.pointer("/properties/privateIPAddress")));
        } else if stored.type_name == container_service::MANAGED_CLUSTER.name {
            &[
                "/properties/fqdn",
                "/properties/privateFQDN",
                "/properties/azurePortalFQDN",
            ]
        } else {
            return false;
        };
        let body = stored.body();
        pointers.iter().any(|pointer| names_host(body.pointer(pointer)))
    })
}

/// The type of user-assigned identities, which sign in when they have federated credentials.
pub(crate) const USER_ASSIGNED_IDENTITY: &str = "Microsoft.ManagedIdentity/userAssignedIdentities";

/// The `name` a document of a type has when it is not its id's last segment (a Uniform scale set
/// instance is `<set>_<instance id>`).
pub(crate) fn stored_name(type_name: &str, id: &str) -> Option<String> {
    compute::stored_name(type_name, id)
}

/// The child types embedded in documents of `parent`, with their array property.
pub(crate) fn embedded_children(
    parent: &str,
) -> impl Iterator<Item = (&'static str, &'static ResourceType)> + '_ {
    registry().filter_map(move |child| match child.storage {
        Storage::Embedded { property }
            if parent_type(child.name).is_some_and(|p| p.eq_ignore_ascii_case(parent)) =>
        {
            Some((property, child))
        }
        _ => None,
    })
}

/// `Microsoft.Network/virtualNetworks` for `Microsoft.Network/virtualNetworks/subnets`.
pub(crate) fn parent_type(type_name: &str) -> Option<&str> {
    let (parent, _) = type_name.rsplit_once('/')?;
    parent.contains('/').then_some(parent)
}

/// Removes the property at a dotted path (`storageProfile.osDisk.name`); an array on the way
/// applies the rest of the path to each of its elements.
pub(crate) fn remove_path(value: &mut Value, path: &str) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|item| remove_path(item, path)),
        Value::Object(map) => match path.split_once('.') {
            None => {
                map.remove(path);
            }
            Some((head, rest)) => {
                if let Some(next) = map.get_mut(head) {
                    remove_path(next, rest);
                }
            }
        },
        _ => {}
    }
}

/// Removes the property at a dotted path under `properties`, or from the document's root when
/// the path starts with `/`.
pub(crate) fn remove_shaped(body: &mut Value, path: &str) {
    match path.strip_prefix('/') {
        Some(from_root) => remove_path(body, from_root),
        None => {
            if let Some(properties) = body.get_mut("properties") {
                remove_path(properties, path);
            }
        }
    }
}

/// Sets `properties.provisioningState`; with `children`, also on embedded children still in
/// progress when the parent succeeds.
pub(crate) fn set_provisioning_state(body: &mut Value, state: &str, children: bool) {
    let Some(properties) = body.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    properties.insert("provisioningState".into(), Value::String(state.to_owned()));
    if !children || state != "Succeeded" {
        return;
    }
    for value in properties.values_mut() {
        let Some(items) = value.as_array_mut() else {
            continue;
        };
        for item in items {
            if let Some(child_state) = item.pointer_mut("/properties/provisioningState")
                && matches!(child_state.as_str(), Some("Updating" | "Creating"))
            {
                *child_state = Value::String("Succeeded".into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{container_service, find, network, registry, resolves};
    use crate::state::State;

    #[test]
    fn hosts_resolve_to_public_ips_load_balancer_frontends_and_cluster_api_servers() {
        let mut state = State::default();
        let group = "/subscriptions/s/resourcegroups/g/providers";
        state.put_doc(
            &format!("{group}/microsoft.network/publicipaddresses/ip"),
            network::PUBLIC_IP.name,
            json!({"properties": {"ipAddress": "20.1.2.3", "dnsSettings": {"fqdn": "demo.westeurope.cloudapp.azure.com"}}}),
            false,
        );
        state.put_doc(
            &format!("{group}/microsoft.network/loadbalancers/lb"),
            network::LOAD_BALANCER.name,
            json!({"properties": {"frontendIPConfigurations": [
                {"name": "public", "properties": {"publicIPAddress": {"id": "x"}}},
                {"name": "internal", "properties": {"privateIPAddress": "10.0.0.100"}},
            ]}}),
            false,
        );
        state.put_doc(
            &format!("{group}/microsoft.containerservice/managedclusters/aks"),
            container_service::MANAGED_CLUSTER.name,
            json!({"properties": {
                "fqdn": "aks-1.hcp.westeurope.azmk8s.io",
                "privateFQDN": "aks-1.privatelink.westeurope.azmk8s.io",
                "azurePortalFQDN": "aks-1.portal.hcp.westeurope.azmk8s.io",
            }}),
            false,
        );
        for host in [
            "20.1.2.3",
            "Demo.WestEurope.cloudapp.azure.com",
            "demo.westeurope.cloudapp.azure.com.",
            "10.0.0.100",
            "aks-1.hcp.westeurope.azmk8s.io",
            "aks-1.privatelink.westeurope.azmk8s.io",
            "aks-1.portal.hcp.westeurope.azmk8s.io",
        ] {
            assert!(resolves(&state, host, None), "{host}");
        }
        for host in [
            "20.1.2.4",
            "other.westeurope.cloudapp.azure.com",
            "x",
            "management.azure.com",
        ] {
            assert!(!resolves(&state, host, None), "{host}");
        }
    }

    /// From a management network, a private zone's name resolves while the zone is linked to the
    /// network, and reaches while the address lies in a network peered with it both ways; a
    /// private frontend likewise.
    #[test]
    fn from_a_management_network_private_names_need_a_link_and_addresses_a_peering() {
        let sub = "/subscriptions/s/resourcegroups";
        let hub = format!("{sub}/hub/providers/microsoft.network/virtualnetworks/hub");
        let spoke = format!("{sub}/c/providers/microsoft.network/virtualnetworks/c-vnet");
        let zone = format!("{sub}/c/providers/microsoft.network/privatednszones/c.capz.io");
        let link = format!("{zone}/virtualnetworklinks/hub-link");
        let peering = |name: &str, remote: &str| json!({"name": name, "properties": {"remoteVirtualNetwork": {"id": remote}}});
        let network = |prefix: &str, peerings: Value| json!({"properties": {"addressSpace": {"addressPrefixes": [prefix]}, "virtualNetworkPeerings": peerings}});
        let mut state = State::default();
        let vnet = network::VIRTUAL_NETWORK.name;
        state.put_doc(
            &hub,
            vnet,
            network("192.168.0.0/24", json!([peering("hub-To-c", &spoke)])),
            false,
        );
        state.put_doc(
            &spoke,
            vnet,
            network("10.0.0.0/8", json!([peering("c-To-hub", &hub)])),
            false,
        );
        state.put_doc(
            &zone,
            "Microsoft.Network/privateDnsZones",
            json!({"properties": {}}),
            false,
        );
        state.put_doc(
            &link,
            "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
            json!({"properties": {"virtualNetwork": {"id": hub.to_uppercase()}}}),
            false,
        );
        state.put_doc(
            &format!("{zone}/a/apiserver"),
            "Microsoft.Network/privateDnsZones/A",
            json!({"properties": {"aRecords": [{"ipv4Address": "10.0.0.100"}]}}),
            false,
        );
        state.put_doc(&format!("{sub}/c/providers/microsoft.network/loadbalancers/internal"), network::LOAD_BALANCER.name,
            json!({"properties": {"frontendIPConfigurations": [{"name": "f", "properties": {"privateIPAddress": "10.0.0.100"}}]}}), false);
        let from = Some(hub.as_str());
        for host in ["apiserver.c.capz.io", "APIServer.C.capz.io.", "10.0.0.100"] {
            assert!(resolves(&state, host, from), "{host} from the hub");
            assert!(
                !resolves(
                    &state,
                    host,
                    Some(&format!("{sub}/x/providers/microsoft.network/virtualnetworks/x"))
                ),
                "{host} from elsewhere"
            );
        }
        assert!(
            !resolves(&state, "apiserver.c.capz.io", None),
            "a private zone is no public name"
        );
        assert!(
            !resolves(&state, "other.c.capz.io", from),
            "a name with no record"
        );
        // Without the peering back, neither the name nor the frontend reaches.
        state.change_doc(&spoke, |body| {
            body["properties"]["virtualNetworkPeerings"] = json!([]);
        });
        assert!(!resolves(&state, "apiserver.c.capz.io", from));
        assert!(!resolves(&state, "10.0.0.100", from));
        state.change_doc(&spoke, |body| {
            body["properties"]["virtualNetworkPeerings"] = json!([peering("c-To-hub", &hub)]);
        });
        assert!(resolves(&state, "apiserver.c.capz.io", from));
        // Without the zone's link to the hub, the name does not resolve; the address still reaches.
        state.remove_doc(&link);
        assert!(!resolves(&state, "apiserver.c.capz.io", from));
        assert!(resolves(&state, "10.0.0.100", from));
    }

    /// The store resolves the type of every object holding a reference among the served types;
    /// a back-reference naming another type would never be filled.
    #[test]
    fn back_references_come_from_served_types() {
        for resource_type in registry() {
            for back in resource_type.back_references {
                for from in back.from {
                    assert!(find(from).is_some(), "{}: {from}", resource_type.name);
                }
            }
        }
    }
}
