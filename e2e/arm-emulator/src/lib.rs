//! An offline emulator of Azure Resource Manager (ARM).
//!
//! It answers ARM requests the way Azure does (URL layout, `api-version`, status codes, long-running
//! operations, error bodies) from an in-memory state, so that capz-rs and any Azure SDK can be
//! tested, demonstrated and dry-run without Azure. Tests start it in-process on a random port with
//! [`start_tls`] (HTTPS, with a CA made by [`tls::Tls::generate`]) or [`start`] (plain HTTP); the
//! `arm-emulator` binary serves it on a fixed address.
//!
//! # What it serves today
//!
//! | Resource type | Writes | api-versions |
//! |---|---|---|
//! | `Microsoft.Resources/resourceGroups` | sync PUT/PATCH; DELETE 202 + `Location`, deletes everything in the group (unless something outside refers into it, see below) | 2019-10-01, 2020-06-01 (recordings), 2021-04-01 (Go SDK), 2022-09-01, 2023-07-01 (Python SDK), 2024-03-01 (capz-rs), 2024-07-01 … 2025-04-01 |
//! | `/subscriptions/{sub}/operationresults/{id}` | GET: 202 while running, 200 when done | as resource groups |
//! | `{scope}/providers/Microsoft.Resources/tags/default` (a subscription, a resource group or a resource) | GET; PUT replaces the tags; PATCH with `operation` `Merge`, `Replace` or `Delete` (by name, or by name and value); DELETE removes them all; 200 at once; names with `<>%&\?/` refused (400 `InvalidTagNameCharacters`); a group's and a resource's tags are their own `tags`, and a resource gets a new etag | as resource groups |
//! | `/subscriptions/{sub}/resources`, `/subscriptions/{sub}/resourceGroups/{group}/resources` | GET: the tracked resources (those with a location) in the generic shape (`id`, `name`, `type`, `location`, `tags`, `sku`, `kind`, `identity`, `zones`, …), paged; `$filter` on `resourceType`, `name`, `location`, `resourceGroup`, `tagName` / `tagValue` (`eq`, joined with `and`) and `substringof('…', name)`, anything else 400 `InvalidFilterInQueryString` | as resource groups |
//! | `/tenants`, `/subscriptions`, `/subscriptions/{sub}`, `/subscriptions/{sub}/locations` | GET: the configured tenants, subscriptions and locations (what `az login` and SDKs read first) | 2016-06-01, 2019-11-01, 2020-01-01, 2021-01-01, 2022-01-01, 2022-12-01 (Azure CLI, Python SDK; capz-rs reads locations with it) |
//! | `Microsoft.Network/virtualNetworks` (+ `/subnets`), `networkSecurityGroups` (+ `/securityRules`), `routeTables` (+ `/routes`), `natGateways`, `publicIPAddresses`, `publicIPPrefixes`, `loadBalancers` (+ `/frontendIPConfigurations`, `/backendAddressPools`, `/loadBalancingRules`, `/probes`, `/inboundNatRules`, `/outboundRules`, `/inboundNatPools`), `networkInterfaces` (+ `/ipConfigurations`) | PUT 201/200 + `Azure-AsyncOperation`; DELETE 202 + both headers; etags | 2020-06-01 … 2025-05-01, 2026-03-01 (recordings: 2020-11-01, 2024-03-01, 2025-03-01; Go SDK armnetwork v4–v6: 2023-05-01 … 2024-05-01; capz-rs: 2024-05-01; Python SDK 28–29: 2024-05-01, 2024-07-01; 33: 2026-03-01) |
//! | `Microsoft.Network/virtualNetworks/virtualNetworkPeerings` (kept in the network's document) | as the network types; `peeringState` `Initiated` until the remote network peers back, then `Connected` on both sides, `Disconnected` once the other side or the remote network is gone; overlapping address spaces refused (400 `VnetAddressSpacesOverlap`); the remote network may lie in another group or subscription and may be deleted under the peering | as the network types |
//! | `Microsoft.Network/bastionHosts` (+ `/bastionHostIpConfigurations`) | as the network types; the subnet must be `AzureBastionSubnet` (400 `SubnetNameMustBeAzureBastionSubnet`), a /27 or larger (a /26 past two scale units), the public IP Standard and static; a security group attached to `AzureBastionSubnet` must hold Bastion's rules (400 `NetworkSecurityGroupNotCompliantForAzureBastionSubnet` on the subnet's write); `dnsName` once provisioned | as the network types |
//! | `Microsoft.Network/privateDnsZones` (+ `/virtualNetworkLinks`, `/A`, `/AAAA`, `/CNAME`, `/MX`, `/PTR`, `/SOA`, `/SRV`, `/TXT`) | zones and links: location `global`, PUT 202 with `{}`, `Azure-AsyncOperation` and `Location` under the resource group (`privateDnsOperationStatuses`, answered 202 while running, `privateDnsOperationResults`), bare or quoted etags; a zone comes with its SOA record set, counts its record sets and links, and cannot be deleted while linked (409 `CannotDeleteResource`); record sets are written at once (201/200, DELETE 200) with their `fqdn`; a linked network may be deleted under its link | 2018-09-01, 2020-01-01, 2020-06-01 (recordings), 2024-06-01 (recordings, Python SDK azure-mgmt-privatedns 2.0) |
//! | `Microsoft.Network/privateEndpoints` (+ `/privateLinkServiceConnections`, `/manualPrivateLinkServiceConnections`, `/privateDnsZoneGroups`), `privateLinkServices` (+ `/ipConfigurations`) | as the network types; an endpoint connects one target (a storage account's sub-resource, or a private link service behind an internal load balancer's frontend) through an interface made for it (`<endpoint>.nic.<guid>`, gone with the endpoint, in use until then), approved at once unless manual or to another subscription's service that does not approve it automatically, `Disconnected` once the target is gone; targets list their endpoint connections; a DNS zone group writes the target's A record set into each zone it names and removes it when deleted | as the network types |
//! | `Microsoft.Storage/storageAccounts` | PUT 202 with no body and only `Location` (`.../asyncoperations/{id}`, answering the account when done); DELETE 200 at once; names global (409 `StorageAccountAlreadyTaken`) | 2021-04-01 (recordings), 2021-09-01, 2022-09-01, 2023-01-01, 2023-05-01 (Go SDK), 2024-01-01, 2025-01-01, 2025-06-01, 2026-09-01 (Python SDK azure-mgmt-storage 25) |
//! | `Microsoft.ManagedIdentity/userAssignedIdentities` (+ `/federatedIdentityCredentials`) | sync | 2018-11-30, 2023-01-31 (recordings, Go SDK, capz-rs), 2024-11-30 (Python SDK) and previews |
//! | `Microsoft.Authorization/roleAssignments` (any scope), `roleDefinitions` (built-ins seeded) | sync; lists take `$filter` (`roleName eq`, `type eq`; `principalId eq`, `assignedTo()`, `atScope()`) | 2015-07-01, 2020-08-01-preview, 2022-04-01 (recordings, Go and Python SDKs, capz-rs) and previews |
//! | `Microsoft.Compute/virtualMachines` | PUT (201 `Creating` / 200 `Updating` + `Azure-AsyncOperation`; creates the OS disk and empty data disks, attaches existing ones; checks size, zones, SKU restrictions (409 `SkuNotAvailable`), confidential sizes for `ConfidentialVM`, interfaces, image, availability set, vCPU quotas, the admin password's complexity and Windows computer names; never answers `customData` or `adminPassword`), GET (`$expand=instanceView`), PATCH, DELETE (202; takes along the disks and interfaces whose `deleteOption` is `Delete`, releases the others), lists; POST `powerOff` (`skipShutdown`), `deallocate` (`hibernate` ignored), `start`, `restart` (202 + `Azure-AsyncOperation` + `Location`; `Updating` and `stopping` / `deallocating` / `starting` while the operation runs, then `stopped` / `deallocated` / `running`; a write keeps the power state) | 2020-06-01, 2020-12-01 (recordings), 2021-03-01, 2021-04-01, 2021-07-01, 2021-11-01, 2022-03-01 (recordings), 2022-08-01, 2022-11-01, 2023-03-01, 2023-07-01, 2023-09-01, 2024-03-01, 2024-07-01 (Go SDK armcompute v5/v6, capz-rs), 2024-11-01 (Python SDK azure-mgmt-compute 33-35), 2025-04-01, 2026-04-01 (Python SDK 39) |
//! | `Microsoft.Compute/virtualMachines/instanceView` | GET: provisioning and power state (`PowerState/running`, `starting`, `stopping`, `stopped`, `deallocating`, `deallocated`) | as virtual machines |
//! | `Microsoft.Compute/virtualMachineScaleSets` (+ `/extensions`) | PUT (201 `Creating` / 200 `Updating` + `Azure-AsyncOperation`), PATCH, GET, DELETE (202; takes its instances, their disks, a Flexible set's machines and their interfaces along), lists; `sku.capacity` creates instances (balanced across the set's zones, ids never reused) and deletes the surplus (by default from the fullest zone, highest id first; `scaleInPolicy` `OldestVM` / `NewestVM`), all settling when the operation ends; each instance answers the extensions of the model it was made from in `resources`, settling with it; a new instance model (profile or size) reaches the instances at once under `Automatic` and `Rolling`, under `Manual` through `manualupgrade` or `reimage`; size, SKU restrictions, vCPU quotas (instances counted with machines) and `Config::capacity` (an instance with no room ends `Failed`, the operation `ZonalAllocationFailed` / `AllocationFailed`) as for machines; POST `delete` (`instanceIds`, `forceDeletion`), `manualupgrade`, `reimage`, `restart`, `start`, `poweroff` | as virtual machines |
//! | `Microsoft.Compute/virtualMachineScaleSets/virtualMachines` (a Uniform set's instances, `<set>_<id>`, computer names `<prefix>` + the id in six base-36 digits) | GET (`$expand=instanceView`), list per set (a Flexible set lists its machines), DELETE (202; the set shrinks), PUT of the protection policy; `latestModelApplied`; POST `restart`, `start`, `poweroff`, `reimage`; `.../instanceView`; `.../networkInterfaces[/{name}]` and the set's `networkInterfaces` (addresses from the model's subnets); the set's `instanceView` and `rollingUpgrades/latest` | as virtual machines (interfaces: as the network types, and 2018-10-01) |
//! | `Microsoft.Compute/virtualMachines/extensions` | PUT (201/200 + `Azure-AsyncOperation`; never answers `protectedSettings`), GET, DELETE (202), list per machine | as virtual machines |
//! | `Microsoft.Compute/disks` | PUT (202 + `Azure-AsyncOperation` + `Location`, the body echoing the request; the `DiskOperations` status carries the disk), GET, PATCH, DELETE (202; 409 while attached), lists | 2020-09-30 (recordings), 2020-12-01, 2021-04-01, 2021-08-01, 2021-12-01, 2022-03-02, 2022-07-02, 2023-01-02, 2023-04-02 (Go SDK), 2023-10-02, 2024-03-02 (recordings, Go and Python SDKs, capz-rs), 2025-01-02, 2026-03-02 (Python SDK) |
//! | `Microsoft.Compute/snapshots` | as disks (never attached; `incremental`, no performance tier); created `Empty`, by `Copy` of a disk or snapshot, by `Import` of a blob | as disks |
//! | `Microsoft.Compute/images` (managed images) | PUT (201 `Creating` / 200 `Updating` + `Azure-AsyncOperation`; the OS disk from a snapshot, a managed disk or a blob, data disks by LUN, or `sourceVirtualMachine`: a missing source is 404 `NotFound` naming it), GET, PATCH, DELETE (202), lists | as virtual machines (2021-07-01 and 2022-03-01 recorded) |
//! | `Microsoft.Compute/galleries` (+ `/images`, `/images/{i}/versions`) | PUT (201 `Creating` / 200 `Updating` + `Azure-AsyncOperation`), GET, PATCH, DELETE (202; 409 `CannotDeleteResource` while nested resources exist), lists; a gallery's `identifier.uniqueName` and community `publicNames`; a definition's OS, state, identifier and generation cannot change (409 `PropertyChangeNotAllowed`); a version's source must exist (and be of its definition's Hyper-V generation, or its operation fails `Conflict`), its target regions be known, `$expand=ReplicationStatus` shows it replicated | 2021-07-01, 2022-01-03, 2022-03-03, 2022-08-03, 2023-07-03 (Go SDK v5), 2024-03-03 (Go SDK v6, Python SDK 33-35), 2025-03-03, 2026-03-03 (Python SDK 39) |
//! | `Microsoft.Compute/capacityReservationGroups` (+ `/capacityReservations`) | group: PUT (201/200, done at once), GET (lists its reservations and the machines and scale sets naming it; `$expand=instanceView`), DELETE (202; 409 while it has reservations or machines), lists; reservation: PUT (201 `Creating` + `Azure-AsyncOperation`; a known size, one zone of a zonal group or none), GET (the group's machines of its size and zone; `$expand=instanceView`), DELETE (202) | as virtual machines, from 2021-04-01 |
//! | `Microsoft.Compute/availabilitySets` | PUT (200, done at once), GET (lists its machines), DELETE (200; 409 while it holds machines), lists | as virtual machines (2024-11-01 recorded) |
//! | `Microsoft.Compute/skus` | GET list, `$filter=location eq '<location>'`: the VM sizes CAPZ uses (confidential ones included) and the availability set SKUs, in every location, restricted as `Config::sku_restrictions` says | 2017-09-01, 2019-04-01, 2021-07-01 (every SDK) |
//! | `Microsoft.Compute/locations/{loc}/publishers/{p}/artifacttypes/vmimage/offers/{o}/skus/{s}/versions[/{v}]` | GET: CAPZ's marketplace reference images and the recorded sessions' images | as virtual machines |
//! | `Microsoft.Compute/locations/{loc}/sharedGalleries/{unique name}/images/{i}/versions[/{v}]` | GET: the versions, replicated to the location, of galleries whose sharing permissions are `Groups` | as galleries |
//! | `Microsoft.Compute/locations/{loc}/communityGalleries/{g}/images/{i}/versions[/{v}]` | GET: CAPZ's community gallery reference images | as galleries |
//! | `Microsoft.ContainerService/managedClusters` (+ `/agentPools`) | PUT (201 `Creating` / 200 `Updating`, `Upgrading`, `Scaling` + `Azure-AsyncOperation`), GET, DELETE (202, taking the node resource group), lists; a cluster's `agentPoolProfiles` are its pools; POST `listClusterAdminCredential`, `listClusterUserCredential`, `listClusterMonitoringUserCredential` (200, a kubeconfig trusting the cluster's own CA, signed in with a client certificate of it; the user's of a cluster with Entra integration signs in through kubelogin instead; the admin's of one without local accounts is refused), `stop`, `start`; one operation per cluster (409 `OperationNotAllowed`); AKS's own errors, unwrapped with a `subcode` | 2022-04-01 (recorded credential listings), 2024-09-01, 2025-08-01, 2025-10-02-preview (recordings), and the Go and Python SDKs' up to 2026-08-01 (azure-mgmt-containerservice 41) |
//! | `Microsoft.ContainerService/managedClusters/maintenanceConfigurations` | PUT and DELETE at once (200), GET, list; names `default`, `aksManagedAutoUpgradeSchedule`, `aksManagedNodeOSUpgradeSchedule` | as managed clusters |
//! | `Microsoft.ContainerService/locations/{loc}/kubernetesVersions`, `.../orchestrators`, `{cluster}/upgradeProfiles/default`, `{pool}/upgradeProfiles/default` | GET: the offered releases and the upgrades open from a version | as managed clusters |
//! | `{resource}/providers/Microsoft.ResourceHealth/availabilityStatuses[/current]` | GET: `Available` once the resource's last operation succeeded, `Unknown` while one runs, `Degraded` when it failed | 2015-01-01 to 2025-05-01 |
//! | `{provider}/locations/{loc}/operations/{id}`, `.../DiskOperations/{id}`, `{group}/providers/Microsoft.Network/privateDnsOperationStatuses/{id}` | GET: the operation's status | the api-version of the request that started it |
//!
//! "capz-rs" marks the versions capz-rs's own controllers pin (`ArmModel::API_VERSION` of its
//! models; extensions and availability sets follow virtual machines). The exact lists live with
//! each family in `resources/`. Child resources of Microsoft.Network live
//! inside their parent's document, as Azure keeps them: they share its etag, and a PUT of the
//! parent replaces them (refused while one is in use).
//!
//! Protocol, for every provider type: PUT creates (201) or replaces (200) and PATCH merges (RFC 7386);
//! GET, DELETE (204 when there is nothing to delete), lists per resource group, per subscription and
//! of child resources, paged with `nextLink` (`Config::page_size`); `If-Match` / `If-None-Match`
//! (412 `PreconditionFailed`); long-running operations whose status (`InProgress`, `Succeeded`,
//! `Failed` or `Canceled` with the error) is polled at the `Azure-AsyncOperation` URL, and whose
//! `Location` URL answers 202 until the end; `provisioningState` moving through `Creating` /
//! `Updating` / `Deleting`; latency per resource type (`Config::latencies`). A write or delete
//! that meets an operation still running on the same resource gets what its provider answers:
//! Microsoft.Network 409 `AnotherOperationInProgress` (a document and the children kept inside it
//! count as one), virtual machines and extensions take the later request and end the earlier
//! operation `Canceled` (`OperationPreempted`) but refuse writes to a machine being deleted (409
//! `OperationNotAllowed`), managed disks and snapshots 409 `Conflict`, AKS 409 `OperationNotAllowed`
//! for anything on the same cluster; a repeated delete is answered with the
//! deletion in flight. Writes to or into a resource group being deleted get 409
//! `ResourceGroupBeingDeleted`. Referential integrity: every
//! `{"id": ...}` a body names must be a fully qualified id (400 `LinkedInvalidPropertyId`) and exist
//! with the type its property names (404 `NotFound`), and a resource others refer to cannot be
//! deleted (400 `InUseSubnetCannotBeDeleted`, `PublicIPAddressCannotBeDeleted`, …), not even by
//! deleting its resource group: what resources outside the group refer to stays with what it uses
//! in the group, the rest goes, and the group's deletion ends `Failed` (409
//! `ResourceGroupDeletionBlocked`, each in-use error in its details); Azure's
//! back-references (a subnet's `ipConfigurations`, a public IP's `ipConfiguration`, a pool's
//! `backendIPConfigurations`, …) are filled in. Addresses: private IPs from the subnet (the first
//! four kept back), public IPs and prefixes from `Config::public_ip_pool`, DNS labels giving
//! `<label>.<location>.cloudapp.azure.com`. Locations must be configured ones (400
//! `LocationNotAvailableForResourceType`, `LocationNotAvailableForResourceGroup` for groups);
//! subscriptions too (404 `SubscriptionNotFound`).
//!
//! A missing `api-version` is answered with 400 `MissingApiVersionParameter`; an unsupported one, as
//! ARM does, with 400 `InvalidApiVersionParameter` listing the supported versions for
//! Microsoft.Resources paths (resource groups, subscriptions, tenants) and with 400
//! `NoRegisteredProviderFound` (naming the location, the type, the supported versions and
//! locations) for a resource provider's types; bodies that are not
//! JSON objects, or properties of the wrong type, get 400 `InvalidRequestContent` naming the
//! property; names breaking Azure's naming rules for their type get 400 `InvalidResourceName`
//! (`InvalidResourceGroup` for groups); bodies over 4 MB get 413 `RequestContentTooLarge`.
//!
//! Every ARM answer carries `x-ms-request-id`, `x-ms-correlation-request-id` (the client's, when it
//! sent one) and `x-ms-ratelimit-remaining-subscription-{reads,writes,deletes}`: each principal has
//! token buckets (`Config::rate_limits`, by default Azure's documented 250 reads at 25/s, 200 writes
//! and deletes at 10/s); an empty bucket answers 429 `SubscriptionRequestsThrottled` with
//! `Retry-After`, naming the kind of request, the subscription and the caller. The header of the
//! request's kind is on every ARM answer, refusals (401, 403, 429) and injected faults included. Creating, updating (an
//! extension write counts) and deleting a virtual machine also draw on Microsoft.Compute's buckets,
//! one per subscription (1,500) and one per machine (12), reported in
//! `x-ms-ratelimit-remaining-resource` (`Microsoft.Compute/PutVMResource;11`, …) and refused with
//! 429 `OperationNotAllowed` whose details name the exhausted policy. With `Config::rbac` on,
//! a call also needs a role assignment at or above its scope whose role allows the action (403
//! `AuthorizationFailed`).
//!
//! # Microsoft Entra ID, IMDS and cloud metadata
//!
//! Every ARM call needs `Authorization: Bearer <token>` with a token the emulator issued (401
//! `AuthenticationFailed`, `InvalidAuthenticationToken`, `InvalidAuthenticationTokenAudience`,
//! `InvalidAuthenticationTokenTenant` or `ExpiredAuthenticationToken` otherwise, with ARM's
//! `WWW-Authenticate` challenge). The emulator plays Entra ID well enough for MSAL and the Azure
//! SDKs' identity libraries, with the emulator registered as a custom cloud:
//! - `POST /{tenant}/oauth2/v2.0/token` (and v1 `/{tenant}/oauth2/token`): client credentials with
//!   the client secret, certificate-signed assertion or federated token of a configured principal;
//! - `GET /{tenant}/v2.0/.well-known/openid-configuration` (and v1), `/{tenant}/discovery/v2.0/keys`,
//!   `/common/discovery/instance`: the documents MSAL reads first;
//! - `GET /metadata/identity/oauth2/token`: managed identity tokens as IMDS serves them, also on a
//!   plain-HTTP socket of its own with [`start_imds`];
//! - `GET /metadata/endpoints`: ARM's cloud metadata, naming the emulator as resource manager and
//!   login endpoint.
//!
//! Tests get a token without HTTP with [`Emulator::access_token`].
//!
//! # Operations API
//!
//! Outside the ARM paths, under `/_emulator/`:
//! - `GET /_emulator/health`: `ok` once the emulator serves;
//! - `POST /_emulator/reset`: back to the start state (built-in roles and seeded resources), with no
//!   operation, logged request or fault rule;
//! - `GET /_emulator/requests`: the last requests (method, path, resource type, status, caller),
//!   sign-ins included (token requests, resource type `-`), and the count of every request by method,
//!   resource type and status since the start or the last reset;
//! - `GET|POST|DELETE /_emulator/faults`, `DELETE /_emulator/faults/{id}`: fault rules
//!   ([`faults::Fault`]): fail the next N or a percentage of matching calls with a status and ARM
//!   code, add latency, drop the connection, or make the operation a call starts end `Failed` or
//!   `Canceled`;
//! - `GET /_emulator/snapshot` / `PUT /_emulator/snapshot`: the whole state as JSON, and back;
//! - `GET /_emulator/inventory`: every resource with its type, provisioning state and whether it
//!   was seeded;
//! - `GET /_emulator/boots[?keys=true]`: what each machine would boot from its custom data, with
//!   its power state and private addresses (and, asked for, the cluster's keys and bootstrap token),
//!   and each running managed cluster with its endpoint and nodes (and, asked for, its CA);
//! - `GET|PUT|DELETE /_emulator/routes`: the proxy's routes from an emulated address to a local
//!   listener (also [`Emulator::add_route`]).
//!
//! The operations API, the Entra endpoints and IMDS need no token.

mod admin;
mod api_versions;
mod boot;
pub mod config;
mod engine;
mod entra;
mod error;
pub mod faults;
mod ip;
mod path;
pub mod proxy;
mod rbac;
mod resource_groups;
mod resource_list;
mod resources;
mod state;
mod subscriptions;
mod tags;
pub mod throttle;
mod time;
pub mod tls;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub use config::Config;
pub use entra::Caller;
pub use entra::imds::{RunningImds, start_imds};
pub use error::ArmError;
pub use state::LoggedRequest;

use path::ArmPath;
use resources::{Catalogue, ResourceType};
use state::State;

/// The emulator: its configuration and state. Cloning shares the state.
#[derive(Debug, Clone)]
pub struct Emulator {
    /// Shared, not copied: the router clones the emulator for every request.
    config: Arc<Config>,
    base_url: Arc<Mutex<String>>,
    state: Arc<Mutex<State>>,
    entra: Arc<entra::Entra>,
    /// How far the emulator's clock runs ahead of the real one; tests move it forward instead of
    /// waiting for operations to finish.
    skew: Arc<Mutex<Duration>>,
    faults: Arc<Mutex<faults::Faults>>,
    throttle: Arc<Mutex<throttle::Throttle>>,
    /// The proxy's routes to stand-ins for emulated addresses; they name processes outside the
    /// emulator, so neither snapshots nor resets touch them.
    routes: Arc<Mutex<proxy::Routes>>,
}

/// An answer before the common ARM headers are added.
#[derive(Debug)]
pub(crate) struct Answer {
    status: StatusCode,
    body: Option<Value>,
    headers: Vec<(&'static str, String)>,
}

impl Answer {
    pub(crate) fn json(status: StatusCode, body: Value) -> Self {
        Self {
            status,
            body: Some(body),
            headers: Vec::new(),
        }
    }

    pub(crate) fn empty(status: StatusCode) -> Self {
        Self {
            status,
            body: None,
            headers: Vec::new(),
        }
    }

    /// 202 Accepted for a long-running operation polled at `location`.
    pub(crate) fn accepted(location: String, retry_after: u64) -> Self {
        Self {
            status: StatusCode::ACCEPTED,
            body: None,
            headers: vec![("location", location), ("retry-after", retry_after.to_string())],
        }
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut response = match self.body {
            Some(body) => (self.status, axum::Json(body)).into_response(),
            None => (self.status, Body::empty()).into_response(),
        };
        for (name, value) in self.headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}

impl Emulator {
    /// An emulator with an empty state.
    #[must_use]
    pub fn new(config: Config) -> Self {
        let emulator = Self {
            entra: Arc::new(entra::Entra::new(&config)),
            config: Arc::new(config),
            base_url: Arc::new(Mutex::new("http://localhost".into())),
            state: Arc::new(Mutex::new(State::default())),
            skew: Arc::new(Mutex::new(Duration::ZERO)),
            faults: Arc::new(Mutex::new(faults::Faults::default())),
            throttle: Arc::new(Mutex::new(throttle::Throttle::default())),
            routes: Arc::new(Mutex::new(proxy::Routes::default())),
        };
        emulator.seed_built_ins();
        emulator
    }

    /// Moves the emulator's clock forward, as if `by` had passed: operations due by then finish.
    pub fn advance_clock(&self, by: Duration) {
        *lock(&self.skew) += by;
    }

    fn now(&self) -> Instant {
        Instant::now() + *lock(&self.skew)
    }

    /// The emulator's calendar time, moved forward like [`Self::now`]; tokens are stamped with it.
    pub(crate) fn wall_clock(&self) -> SystemTime {
        SystemTime::now() + *lock(&self.skew)
    }

    /// The router serving ARM and the operations API.
    pub fn router(&self) -> Router {
        let routes = Router::new()
            .merge(admin::routes())
            .merge(entra::routes().route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                entra::log_sign_in,
            )))
            .fallback(arm)
            .with_state(self.clone());
        // Clients that join a base URL ending in `/` with a path starting with one send `//`;
        // Azure answers those paths as if written once, so they are mended before routing.
        Router::new().fallback_service(tower::util::MapRequest::new(routes, mend_path))
    }

    /// The base URL clients reach the emulator at; used in `Location` headers.
    #[must_use]
    pub fn base_url(&self) -> String {
        lock(&self.base_url).clone()
    }

    fn set_base_url(&self, url: String) {
        *lock(&self.base_url) = url;
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// A user-assigned identity made through ARM with this client id in this tenant: its key and
    /// document.
    pub(crate) fn arm_identity(&self, tenant: &str, client_id: &str) -> Option<(String, Value)> {
        let state = self.state();
        state.resources.iter().find_map(|(key, stored)| {
            if stored.type_name != resources::USER_ASSIGNED_IDENTITY {
                return None;
            }
            let body = stored.body();
            let properties = &body["properties"];
            let matches = properties["clientId"]
                .as_str()
                .is_some_and(|id| id.eq_ignore_ascii_case(client_id))
                && properties["tenantId"]
                    .as_str()
                    .is_some_and(|id| id.eq_ignore_ascii_case(tenant));
            matches.then(|| (key.to_string(), body.into_owned()))
        })
    }

    /// The federated identity credentials of the identity stored at `key`.
    pub(crate) fn arm_federated_credentials(&self, key: &str) -> Vec<Value> {
        let state = self.state();
        let prefix = format!("{key}/federatedidentitycredentials/");
        state
            .under(&prefix)
            .map(|(_, stored)| stored.body().into_owned())
            .collect()
    }

    /// Where a resource group's deletion is polled, at the base URL the client used.
    pub(crate) fn operation_result_url(base: &str, subscription: &str, id: &str) -> String {
        format!("{base}/subscriptions/{subscription}/operationresults/{id}?api-version=2020-06-01")
    }

    /// The base URL answers name for a request: Azure's own host when the client reached the
    /// emulator through its proxy under one of Azure's names, else the emulator's.
    fn request_base(&self, headers: &HeaderMap) -> String {
        let host = headers
            .get(axum::http::header::HOST)
            .and_then(|host| host.to_str().ok())
            .map(|host| host.rsplit_once(':').map_or(host, |(name, _)| name));
        match host {
            Some(host)
                if proxy::AZURE_HOSTS
                    .iter()
                    .any(|azure| azure.eq_ignore_ascii_case(host)) =>
            {
                format!("https://{}", host.to_ascii_lowercase())
            }
            _ => self.base_url(),
        }
    }

    /// The last requests answered (`Config::request_log_size`, a thousand by default), oldest first: what `GET
    /// /_emulator/requests` lists, for tests running the emulator in-process.
    #[must_use]
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.state().log.iter().cloned().collect()
    }

    /// How many requests with this method, resource type and status were answered.
    #[must_use]
    pub fn count(&self, method: &str, resource_type: &str, status: u16) -> u64 {
        self.state()
            .counters
            .get(&(method.to_owned(), resource_type.to_owned(), status))
            .copied()
            .unwrap_or(0)
    }

    /// Every count [`Emulator::count`] answers: (method, resource type, status) -> requests, since
    /// the start (not limited like the log).
    #[must_use]
    pub fn counts(&self) -> BTreeMap<(String, String, u16), u64> {
        self.state().counters.clone()
    }

    /// How the long-running operation this request starts must end, when a fault rule says it
    /// does not succeed.
    pub(crate) fn operation_failure(&self, method: &Method, path: &str) -> Option<state::Unsuccessful> {
        lock(&self.faults).operation_failure(method, path)
    }

    /// Adds a fault-injection rule; returns its id (for removing it).
    #[expect(clippy::must_use_candidate, reason = "most callers keep the rule until reset")]
    pub fn add_fault(&self, fault: faults::Fault) -> u64 {
        lock(&self.faults).add(fault)
    }

    /// The fault rules in force, with their ids; counted rules leave once used up.
    #[must_use]
    pub fn faults(&self) -> Vec<(u64, faults::Fault)> {
        lock(&self.faults).list().to_vec()
    }

    /// Removes a fault-injection rule; whether it was there.
    #[expect(clippy::must_use_candidate, reason = "a rule already used up is no error")]
    pub fn remove_fault(&self, id: u64) -> bool {
        lock(&self.faults).remove(id)
    }

    /// Answers a signed-in caller's request within its request limits and role assignments,
    /// reporting what remains of its bucket; `drawn` gets the buckets it drew on.
    fn answer_signed_in(
        &self,
        caller: &Caller,
        call: &Call<'_>,
        drawn: &mut throttle::Drawn,
    ) -> (Answer, String) {
        // Budgets are per principal; the message names the subscription, or the tenant for
        // calls outside subscriptions.
        let mut segments = call.path.split('/').skip(1);
        let scope = match (segments.next(), segments.next()) {
            (Some(first), Some(subscription))
                if first.eq_ignore_ascii_case("subscriptions") && !subscription.is_empty() =>
            {
                format!("subscription '{subscription}'")
            }
            _ => format!("tenant '{}'", caller.tenant),
        };
        let allowance = lock(&self.throttle).take(
            &self.config.rate_limits,
            &caller.object_id,
            &scope,
            call.method,
            self.now(),
            drawn,
        );
        let remaining = allowance.as_ref().ok().cloned();
        let (mut answer, resource_type) = match (allowance, self.authorize(caller, call.method, call.path)) {
            (Err((throttled, retry_after)), _) => (retry_later(throttled, retry_after), "-".to_owned()),
            (Ok(_), Err(refused)) => (refused.into_answer(), "-".to_owned()),
            (Ok(_), Ok(())) => self.answer_within_vm_limits(call, drawn),
        };
        if let Some((header, value)) = remaining {
            answer.headers.push((header, value));
        }
        (answer, resource_type)
    }

    /// Answers a request that Microsoft.Compute's virtual machine limits allow, reporting what
    /// remains of them; refuses it with 429 otherwise.
    fn answer_within_vm_limits(&self, call: &Call<'_>, drawn: &mut throttle::Drawn) -> (Answer, String) {
        match self.take_vm_allowance(call.method, call.path, drawn) {
            Err((throttled, retry_after)) => (retry_later(throttled, retry_after), "-".to_owned()),
            Ok(allowance) => {
                let (mut answer, resource_type) = self.answer(call);
                if let Some(remaining) = allowance {
                    answer
                        .headers
                        .push(("x-ms-ratelimit-remaining-resource", remaining));
                }
                (answer, resource_type)
            }
        }
    }

    /// Answers one ARM request.
    fn answer(&self, call: &Call<'_>) -> (Answer, String) {
        let Some(arm_path) = ArmPath::parse(call.path) else {
            return (
                ArmError::no_route(call.method.as_str(), call.path).into_answer(),
                "-".into(),
            );
        };
        let resource_type = arm_path.resource_type();
        let answer = self
            .dispatch(&arm_path, call)
            .unwrap_or_else(ArmError::into_answer);
        (answer, resource_type)
    }

    /// What ARM checks before looking at the state: the api-version (present and served for
    /// the type), the type, and the subscription. Returns the api-version and the provider type.
    fn check<'q>(
        &self,
        arm_path: &ArmPath,
        query: &Query<'q>,
        body: &[u8],
    ) -> Result<(&'q str, Option<Served>), ArmError> {
        let version = query.api_version.ok_or_else(ArmError::missing_api_version)?;
        let provider_type = match arm_path {
            ArmPath::Resource(id) | ArmPath::Collection(id) => {
                let type_name = id.type_name();
                let found = resources::find(&type_name)
                    .map(Served::Stored)
                    .or_else(|| resources::catalogue(&type_name).map(Served::Catalogue))
                    .or_else(|| match arm_path {
                        ArmPath::Collection(_) => {
                            resources::action(&type_name).map(|(on, action)| Served::Action(on, action))
                        }
                        _ => None,
                    })
                    .ok_or_else(|| ArmError::invalid_resource_type(&type_name, version))?;
                Some(found)
            }
            _ => None,
        };
        let supported = match (arm_path, provider_type) {
            (_, Some(Served::Stored(found) | Served::Action(found, _))) => found.api_versions,
            (_, Some(Served::Catalogue(found))) => found.api_versions,
            // Operation status URLs carry the api-version of the request that started them.
            (ArmPath::ProviderOperation { .. }, _) => &[version][..],
            _ => api_versions::supported(&arm_path.resource_type()),
        };
        if !supported.contains(&version) {
            // ARM answers for Microsoft.Resources itself; a provider's type is refused as if no
            // provider were registered for it.
            return Err(match provider_type {
                Some(
                    Served::Stored(ResourceType { name, .. })
                    | Served::Action(ResourceType { name, .. }, _)
                    | Served::Catalogue(Catalogue { name, .. }),
                ) => {
                    let location = self.location_named(arm_path, body);
                    let locations: Vec<&str> =
                        self.config.locations.iter().map(|l| l.name.as_str()).collect();
                    ArmError::no_registered_provider(
                        version,
                        name.split_once('/').map_or(*name, |(_, type_name)| type_name),
                        supported,
                        &location,
                        &locations,
                    )
                }
                None => ArmError::unsupported_api_version(version, supported),
            });
        }
        if let Some(subscription) = arm_path.subscription()
            && !self
                .config
                .subscriptions
                .iter()
                .any(|known| known.id.eq_ignore_ascii_case(subscription))
        {
            return Err(ArmError::subscription_not_found(subscription));
        }
        Ok((version, provider_type))
    }

    /// The location ARM names when it refuses a provider's api-version: the one the body asks
    /// for, else the resource group's, else `global`.
    fn location_named(&self, arm_path: &ArmPath, body: &[u8]) -> String {
        let requested = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|body| body.get("location")?.as_str().map(engine::normalise_location));
        let group = || {
            let (ArmPath::Resource(id) | ArmPath::Collection(id)) = arm_path else {
                return None;
            };
            let key = path::resource_group_id(id.subscription.as_deref()?, id.resource_group.as_deref()?)
                .to_ascii_lowercase();
            let state = self.state();
            let location = state.body(&key)?.get("location")?.as_str()?.to_owned();
            Some(location)
        };
        requested.or_else(group).unwrap_or_else(|| "global".to_owned())
    }

    fn dispatch(&self, arm_path: &ArmPath, call: &Call<'_>) -> Result<Answer, ArmError> {
        let Call {
            method,
            path,
            ref query,
            headers,
            body,
            caller,
        } = *call;
        let (version, provider_type) = self.check(arm_path, query, body)?;
        // The time is read under the lock, so requests see it move forward in the order they
        // change the state: an operation one request started with no latency is over for the next.
        let mut state = self.state();
        let now = self.now();
        state.advance(now);
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let base = self.request_base(headers);
        let request = engine::Request {
            method,
            path,
            api_version: version,
            body,
            if_match: header("if-match"),
            if_none_match: header("if-none-match"),
            skip: query.skip,
            filter: query.filter,
            expand: query.expand,
            query: query.pairs,
            base: &base,
            caller,
            now,
        };
        match (arm_path, method) {
            (ArmPath::ResourceGroups { subscription }, &Method::GET) => {
                Ok(resource_groups::list(self, &state, subscription, &request))
            }
            (ArmPath::ResourceGroup { subscription, name }, &Method::GET) => {
                resource_groups::get(&state, subscription, name)
            }
            (ArmPath::ResourceGroup { subscription, name }, &Method::HEAD) => {
                Ok(resource_groups::head(&state, subscription, name))
            }
            (ArmPath::ResourceGroup { subscription, name }, &Method::PUT) => resource_groups::put(
                &mut state,
                &self.config.locations,
                subscription,
                name,
                &parse_body(body)?,
            ),
            (ArmPath::ResourceGroup { subscription, name }, &Method::PATCH) => {
                resource_groups::patch(&mut state, subscription, name, &parse_body(body)?)
            }
            (ArmPath::ResourceGroup { subscription, name }, &Method::DELETE) => Ok(resource_groups::delete(
                self,
                &mut state,
                subscription,
                name,
                &request,
            )),
            (
                ArmPath::Tenants
                | ArmPath::Subscriptions
                | ArmPath::Subscription { .. }
                | ArmPath::Locations { .. },
                &Method::GET,
            ) => subscriptions::read(&self.config, arm_path).map(|body| Answer::json(StatusCode::OK, body)),
            (ArmPath::OperationResult { subscription, id }, &Method::GET) => {
                resource_groups::operation_result(self, &state, subscription, id, &request)
            }
            (ArmPath::Tags { scope }, method) => tags::answer(&mut state, scope, method, body),
            (ArmPath::GenericResources { subscription, group }, &Method::GET) => {
                resource_list::list(self, &state, subscription, group.as_deref(), &request)
            }
            (ArmPath::ProviderOperation { id, poll, .. }, &Method::GET) => {
                engine::poll(self, &state, id, *poll, &request)
            }
            (ArmPath::Resource(id), _) => match provider_type {
                Some(Served::Stored(found)) => engine::resource(self, &mut state, id, found, &request),
                Some(Served::Catalogue(found)) => engine::catalogue(self, &state, found, id, &request, true),
                Some(Served::Action(..)) | None => {
                    Err(ArmError::invalid_resource_type(&id.type_name(), version))
                }
            },
            (ArmPath::Collection(id), _) => match provider_type {
                Some(Served::Stored(found)) => engine::collection(self, &state, id, found, &request),
                Some(Served::Catalogue(found)) => engine::catalogue(self, &state, found, id, &request, false),
                Some(Served::Action(on, action)) => {
                    engine::action(self, &mut state, id, on, action, &request)
                }
                None => Err(ArmError::invalid_resource_type(&id.type_name(), version)),
            },
            (_, method) => Err(ArmError::method_not_allowed(method.as_str())),
        }
    }
}

/// What a provider path names: a type kept in the store, or a read-only catalogue.
#[derive(Clone, Copy)]
enum Served {
    Stored(&'static resources::ResourceType),
    Catalogue(&'static resources::Catalogue),
    /// A `POST` action of a stored type.
    Action(&'static resources::ResourceType, &'static resources::Action),
}

/// An ARM request as the emulator answers it.
pub(crate) struct Call<'a> {
    pub(crate) method: &'a Method,
    pub(crate) path: &'a str,
    pub(crate) query: Query<'a>,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a [u8],
    /// The object id of the signed-in principal; `None` when the emulator seeds a resource.
    pub(crate) caller: Option<&'a str>,
}

/// The query parameters ARM reads.
#[derive(Default)]
pub(crate) struct Query<'a> {
    pub(crate) api_version: Option<&'a str>,
    /// Where a list page starts.
    pub(crate) skip: usize,
    pub(crate) filter: Option<&'a str>,
    pub(crate) expand: Option<&'a str>,
    /// Every parameter, as sent.
    pub(crate) pairs: &'a [(String, String)],
}

impl<'a> Query<'a> {
    fn from_pairs(pairs: &'a [(String, String)]) -> Self {
        let find = |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.as_str())
        };
        Self {
            api_version: find("api-version"),
            skip: find("$skiptoken")
                .and_then(|token| token.parse().ok())
                .unwrap_or(0),
            filter: find("$filter"),
            expand: find("$expand"),
            pairs,
        }
    }
}

impl ArmError {
    fn into_answer(self) -> Answer {
        if self.unwrapped {
            let body = json!({
                "code": self.code,
                "details": self.details,
                "message": self.message,
                "subcode": "",
            });
            return Answer::json(self.status, body);
        }
        let mut body = json!({ "error": { "code": self.code, "message": self.message } });
        if let Some(target) = self.target {
            body["error"]["target"] = Value::String(target.into());
        }
        if let Some(details) = self.details {
            body["error"]["details"] = Value::Array(details);
        }
        Answer::json(self.status, body)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the state half-written in a way later requests
    // would misread (each handler writes whole entries), so keep serving.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn parse_body(body: &[u8]) -> Result<Value, ArmError> {
    serde_json::from_slice(body).map_err(|err| {
        ArmError::invalid_request_content(format!(
            "The request content was invalid and could not be deserialized: '{err}'."
        ))
    })
}

/// The request with runs of `/` in its path written once.
fn mend_path(mut request: axum::extract::Request) -> axum::extract::Request {
    let uri = request.uri();
    if uri.path().contains("//") {
        let mut path = String::with_capacity(uri.path().len());
        for c in uri.path().chars() {
            if !(c == '/' && path.ends_with('/')) {
                path.push(c);
            }
        }
        let mended = match uri.query() {
            Some(query) => format!("{path}?{query}"),
            None => path,
        };
        if let Ok(mended) = mended.parse() {
            *request.uri_mut() = mended;
        }
    }
    request
}

/// The client's `User-Agent`, for the request log.
pub(crate) fn user_agent(headers: &HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// A 429 telling the client when to come back.
fn retry_later(throttled: ArmError, seconds: u64) -> Answer {
    let mut answer = throttled.into_answer();
    answer.headers.push(("retry-after", seconds.to_string()));
    answer
}

async fn arm(
    AxumState(emulator): AxumState<Emulator>,
    method: Method,
    uri: Uri,
    axum::extract::Query(query): axum::extract::Query<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let received = SystemTime::now();
    let path = uri.path().to_owned();
    let effect = lock(&emulator.faults).on_request(&method, &path);
    if let Some(delay) = effect.delay {
        tokio::time::sleep(delay).await;
    }
    if effect.drop_connection {
        return Response::new(Body::new(BrokenBody));
    }
    // ARM refuses a request body over its size limit before it looks at anything else.
    let body = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await;
    let mut drawn = throttle::Drawn::default();
    let (mut answer, resource_type, caller) = match (effect.answer, body) {
        (None, Err(_)) => {
            let too_large = ArmError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "RequestContentTooLarge",
                "The request content size exceeds the maximum size of 4 MB.",
            );
            (too_large.into_answer(), "-".to_owned(), None)
        }
        (Some(error), _) => {
            let resource_type =
                ArmPath::parse(&path).map_or_else(|| "-".to_owned(), |arm_path| arm_path.resource_type());
            let answer = if error.status == StatusCode::TOO_MANY_REQUESTS {
                let seconds = effect
                    .retry_after_seconds
                    .unwrap_or(emulator.config.retry_after_seconds);
                retry_later(error, seconds)
            } else {
                error.into_answer()
            };
            // Azure throttles and fails signed-in callers: the log names who was refused.
            (answer, resource_type, emulator.authenticate(&path, &headers).ok())
        }
        // Every ARM call needs a token; a refused one is answered before its path is looked at.
        (None, Ok(body)) => match emulator.authenticate(&path, &headers) {
            Ok(caller) => {
                let call = Call {
                    method: &method,
                    path: &path,
                    query: Query::from_pairs(&query),
                    headers: &headers,
                    body: &body,
                    caller: Some(&caller.object_id),
                };
                let (answer, resource_type) = emulator.answer_signed_in(&caller, &call, &mut drawn);
                (answer, resource_type, Some(caller))
            }
            Err(refusal) => {
                let mut answer = refusal.error.into_answer();
                answer.headers.push(("www-authenticate", refusal.challenge));
                (answer, "-".to_owned(), None)
            }
        },
    };
    // Every ARM answer tells what remains of the caller's bucket for this kind of request,
    // refusals and injected faults included.
    if !answer
        .headers
        .iter()
        .any(|(name, _)| name.starts_with("x-ms-ratelimit-remaining-subscription-"))
    {
        answer.headers.push(lock(&emulator.throttle).remaining(
            &emulator.config.rate_limits,
            caller.as_ref().map(|caller| caller.object_id.as_str()),
            &method,
            emulator.now(),
        ));
    }
    let retry_after = answer
        .headers
        .iter()
        .find(|(name, _)| *name == "retry-after")
        .and_then(|(_, value)| value.parse().ok());
    emulator.state().record(
        LoggedRequest {
            method: method.as_str().to_owned(),
            path,
            resource_type,
            status: answer.status.as_u16(),
            caller,
            user_agent: user_agent(&headers),
            retry_after,
            budgets: drawn.budgets,
            throttled_by: drawn.empty,
            received,
            answered: SystemTime::now(),
        },
        emulator.config.request_log_size,
    );
    let correlation = headers
        .get("x-ms-correlation-request-id")
        .and_then(|value| value.to_str().ok())
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    answer
        .headers
        .push(("x-ms-request-id", uuid::Uuid::new_v4().to_string()));
    answer.headers.push(("x-ms-correlation-request-id", correlation));
    answer.into_response()
}

/// The largest request body ARM takes: 4 MB.
const MAX_REQUEST_BYTES: usize = 4 << 20;

/// A response body that fails at once, so the server drops the connection mid-answer.
pub(crate) struct BrokenBody;

impl http_body::Body for BrokenBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        std::task::Poll::Ready(Some(Err(std::io::Error::other(
            "connection dropped by a fault rule",
        ))))
    }
}

/// An emulator serving on a socket.
#[derive(Debug)]
pub struct Running {
    /// The emulator, for inspecting its state from the test.
    pub emulator: Emulator,
    /// Where it listens.
    pub address: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Running {
    /// The base URL of the emulator, for example `http://127.0.0.1:40123`.
    #[must_use]
    pub fn base_url(&self) -> String {
        self.emulator.base_url()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Starts an emulator serving plain HTTP on `address` (port 0 picks a free port) in the current
/// Tokio runtime. Azure SDKs need HTTPS; see [`start_tls`].
///
/// # Errors
/// Fails when the address cannot be bound.
pub async fn start(address: SocketAddr, config: Config) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    let emulator = Emulator::new(config);
    emulator.set_base_url(format!("http://{address}"));
    emulator.seed_resources().map_err(std::io::Error::other)?;
    let router = emulator.router();
    let server = tokio::spawn(async move {
        // The server ends only when the task is aborted; an accept error ends it early.
        let _ = axum::serve(listener, router).await;
    });
    Ok(Running {
        emulator,
        address,
        server,
    })
}

/// Starts an emulator serving HTTPS with the certificate of `tls` on `address` (port 0 picks a
/// free port) in the current Tokio runtime.
///
/// # Errors
/// Fails when the address cannot be bound.
pub async fn start_tls(address: SocketAddr, config: Config, tls: &tls::Tls) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    let emulator = Emulator::new(config);
    emulator.set_base_url(format!("https://{address}"));
    emulator.seed_resources().map_err(std::io::Error::other)?;
    let router = emulator.router();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server.clone());
    let server = serve_each(listener, move |stream| {
        let (acceptor, router) = (acceptor.clone(), router.clone());
        async move {
            let _ = serve_https(stream, &acceptor, router).await;
        }
    });
    Ok(Running {
        emulator,
        address,
        server,
    })
}

/// Accepts connections on `listener` until the returned task is aborted, serving each on a task
/// of its own: a failed accept (too many open files) or a client that fails the handshake or
/// breaks off affects its own connection only.
pub(crate) fn serve_each<F, Fut>(listener: tokio::net::TcpListener, serve: F) -> tokio::task::JoinHandle<()>
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(serve(stream));
        }
    })
}

/// Serves the emulator's router over TLS on one connection (a client's, or a tunnel the proxy
/// opened).
pub(crate) async fn serve_https<S>(
    stream: S,
    acceptor: &tokio_rustls::TlsAcceptor,
    router: Router,
) -> std::io::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let stream = acceptor.accept(stream).await?;
    let service = hyper_util::service::TowerToHyperService::new(router);
    hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await
        .map_err(std::io::Error::other)
}
