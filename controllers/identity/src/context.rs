//! The identity controller's identity and what its reconciles share.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Mutex;

use capz_kit::api::common::compute::VmIdentityProfile;
use capz_kit::api::controllers::Family;
use capz_kit::api::{
    AzureCluster, AzureMachine, AzureMachinePool, AzureMachineTemplate, AzureManagedControlPlane,
};
use capz_kit::conditions::Observation;
use capz_kit::controller::ControllerId;
use capz_kit::identity::Identities;
use capz_kit::kube::core::NamespaceResourceScope;
use capz_kit::kube::runtime::reflector::Store;
use capz_kit::kube::{Resource, ResourceExt as _};
use capz_kit::report::Reporter;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

/// The annotation Cluster API puts on objects cloned from a template, naming its kind and group.
const CLONED_FROM_GROUP_KIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";
/// The one kind whose clones share their template's Secret.
const TEMPLATE_GROUP_KIND: &str = "AzureMachineTemplate.infrastructure.cluster.x-k8s.io";

/// The controller's names: binary, field manager (and Secret owner), finalizer (kept on an
/// AzureClusterIdentity while clusters use it), user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Identity);

/// What every reconcile of the controller uses.
pub(crate) struct State {
    pub(crate) client: capz_kit::kube::Client,
    pub(crate) identities: Identities,
    pub(crate) features: capz_rules::Features,
    /// The controller's `AZURE_SUBSCRIPTION_ID`, for clusters naming no subscription.
    pub(crate) subscription: Option<String>,
    pub(crate) reporter: Reporter,
    /// The clusters, whose identity references say which identities are used.
    pub(crate) clusters: Store<AzureCluster>,
    pub(crate) control_planes: Store<AzureManagedControlPlane>,
    /// The sign-ins that failed, by identity.
    pub(crate) failures: Mutex<HashMap<Key, Failure>>,
}

/// An identity as clusters name it: namespace and name.
pub(crate) type Key = (String, String);

/// A sign-in that failed, remembered until `retry_at`.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) generation: Option<i64>,
    pub(crate) retry_at: Instant,
    pub(crate) failures: u32,
    pub(crate) observation: Observation,
}

/// A kind whose machines get an azure.json Secret.
pub(crate) trait MachineSource:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
    /// The managed identities of its machines.
    fn identities(&self) -> &VmIdentityProfile;

    /// Whether its machines use another object's Secret.
    fn shares_template_secret(&self) -> bool {
        false
    }
}

impl MachineSource for AzureMachineTemplate {
    fn identities(&self) -> &VmIdentityProfile {
        &self.spec.template.spec.identities
    }
}

impl MachineSource for AzureMachinePool {
    fn identities(&self) -> &VmIdentityProfile {
        &self.spec.identities
    }
}

impl MachineSource for AzureMachine {
    fn identities(&self) -> &VmIdentityProfile {
        &self.spec.identities
    }

    fn shares_template_secret(&self) -> bool {
        self.annotations()
            .get(CLONED_FROM_GROUP_KIND)
            .is_some_and(|group_kind| group_kind == TEMPLATE_GROUP_KIND)
    }
}
