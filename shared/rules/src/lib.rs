//! The admission rules of the CAPZ kinds: what a manifest means once defaulted, what it may
//! not say, and what may not change after creation.
//!
//! Every rule is a pure function of the object (and, for updates, its previous version), so the
//! webhook server applies them at admission and the controllers reuse the same defaults (names of
//! derived resources, CIDRs) when they build what Azure should hold. Nothing here talks to the
//! API server or Azure; what a rule needs from elsewhere (the subscription of a machine's
//! cluster, the enabled feature gates, randomness) comes in through [`Context`].
//!
//! ```text
//!   field       FieldPath, FieldError, Verdict: errors as the API server words them
//!   cidr        Cidr: containment and overlap of address ranges
//!   features    Features: the CAPZ feature gates admission consults
//!   meta        Kubernetes names, label keys and values, label selectors
//!   names       the names of the Azure resources derived from a cluster's name
//!   checks      Azure's naming rules, DNS names, resource IDs, tag limits
//!   support     the support matrix: which spec fields are acted on, which not yet and why
//!   <kind>      one module per kind: its Rules (default, validate_create, validate_update)
//!     azureclusteridentity   AzureClusterIdentity: what each identity type needs
//!     azurecluster   AzureCluster and AzureClusterTemplate: the network, load balancers, bastion
//!     azuremachine   AzureMachine and AzureMachineTemplate: VM spec defaults, checks, immutability
//!     azuremachinepool   AzureMachinePool and AzureMachinePoolMachine: a scale set's template
//!                    (the machine's VM profile rules), identities, strategy; the MachinePool gate
//! ```
//!
//! Values that must be random (an SSH key, a role-assignment name) are generated only when an
//! object is created for real ([`Context::may_generate`]): never on a dry run or an update. The
//! exception is a machine pool, whose key and identity may change: as CAPZ does, it gets them
//! whenever they are missing, on a real create or update (still never on a dry run).

#![deny(missing_docs)]

pub mod azurecluster;
mod azureclusteridentity;
pub mod azuremachine;
pub mod azuremachinepool;
pub mod azuremanagedcluster;
pub mod azuremanagedcontrolplane;
pub mod azuremanagedmachinepool;
mod checks;
pub mod cidr;
pub mod decode;
pub mod features;
pub mod field;
mod immutable;
pub mod meta;
pub mod names;
mod ssh;
pub mod support;
#[cfg(test)]
mod testing;
mod version;

use capz_api::capi::TOPOLOGY_DRY_RUN_ANNOTATION;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use cidr::Cidr;
pub use features::Features;
pub use field::{ErrorKind, FieldError, FieldPath, Verdict};

/// The admission operation being decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// The object is being created.
    Create,
    /// The object exists and is being changed.
    Update,
    /// The object is being deleted.
    Delete,
}

/// A source of the random values defaulting fills in.
pub trait Entropy: Sync {
    /// A new SSH public key, base64 of its `authorized_keys` line.
    ///
    /// # Errors
    /// When the system's random source fails.
    fn ssh_public_key(&self) -> Result<String, String>;

    /// A new random UUID in its canonical lower-case form.
    fn uuid(&self) -> String;
}

/// Randomness from the operating system.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemEntropy;

impl Entropy for SystemEntropy {
    fn ssh_public_key(&self) -> Result<String, String> {
        ssh::generate_encoded().map_err(|_| "the system random source failed to make an SSH key".to_owned())
    }

    fn uuid(&self) -> String {
        uuid::Uuid::new_v4().to_string()
    }
}

/// What a rule may know besides the object itself.
pub struct Context<'a> {
    /// Create, update or delete.
    pub operation: Operation,
    /// Whether the request only tries what would happen (nothing is stored).
    pub dry_run: bool,
    /// The enabled feature gates.
    pub features: Features,
    /// Where random values come from.
    pub entropy: &'a dyn Entropy,
    /// The subscription of the AzureCluster a machine belongs to, when the caller could find it;
    /// the default scope of a machine's system-assigned identity role.
    pub cluster_subscription_id: Option<String>,
    /// The MachinePool a machine pool belongs to, for the rules that depend on it.
    pub machine_pool: PoolOwner,
    /// The Cluster the object belongs to, when [`Rules::cluster_query`] asked for it.
    pub cluster: OwnerCluster,
}

/// What validation needs looked up about the Cluster an object belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterQuery {
    /// The Cluster's name, in the object's namespace.
    pub name: String,
    /// Whether to count the cluster's System node pools: the AzureManagedMachinePools of the
    /// namespace labelled with the cluster's name and the agent pool mode `System`.
    pub system_pools: bool,
}

/// What the caller found of the Cluster of a [`ClusterQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OwnerCluster {
    /// Not looked up: the rules that need it are skipped.
    #[default]
    NotLookedUp,
    /// There is no Cluster of that name.
    Missing,
    /// Found.
    Found(ClusterFacts),
}

/// The facts about a Cluster that validation reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterFacts {
    /// Whether it is being deleted.
    pub deleting: bool,
    /// Its `spec.clusterNetwork.services.cidrBlocks`.
    pub service_cidrs: Vec<String>,
    /// Its `spec.clusterNetwork.pods.cidrBlocks`.
    pub pod_cidrs: Vec<String>,
    /// How many System node pools it has, when the query asked.
    pub system_pools: Option<usize>,
}

/// What the caller found of the MachinePool whose infrastructure reference names a machine pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PoolOwner {
    /// Not looked up: the rules that need it are skipped.
    #[default]
    NotLookedUp,
    /// There is none.
    Missing,
    /// Found, with its Kubernetes version (`spec.template.spec.version`) if it names one.
    Found {
        /// The version, such as `v1.33.2`.
        version: Option<String>,
    },
}

impl Context<'_> {
    /// Whether defaulting may generate random values: only for a real create.
    #[must_use]
    pub fn may_generate(&self) -> bool {
        self.operation == Operation::Create && !self.dry_run
    }

    /// Whether this is Cluster API's topology controller dry-running `object`; template
    /// immutability lets such a request through.
    #[must_use]
    pub fn is_topology_dry_run(&self, object: &impl Resource) -> bool {
        self.dry_run
            && object
                .meta()
                .annotations
                .as_ref()
                .is_some_and(|annotations| annotations.contains_key(TOPOLOGY_DRY_RUN_ANNOTATION))
    }
}

/// The admission rules of one kind.
pub trait Rules:
    Resource<DynamicType = ()> + kube::CustomResourceExt + Clone + Serialize + DeserializeOwned
{
    /// Fills in what the user left out.
    ///
    /// # Errors
    /// When a value could not be made (the random source failed); nothing is stored then.
    fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError>;

    /// Whether [`Rules::default`] would use [`Context::cluster_subscription_id`] on this object;
    /// the caller looks the subscription up only then, since every admission of the kind (each
    /// status-free update Cluster API makes too) would otherwise cost two reads.
    fn needs_cluster_subscription(&self) -> bool {
        false
    }

    /// Decides whether a new object is acceptable.
    fn validate_create(&self, ctx: &Context<'_>) -> Verdict;

    /// Decides whether a change from `old` is acceptable.
    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict;

    /// The fields (JSON pointers) the schema requires but the kind reads as empty when they are
    /// missing. Defaulting writes them even when it leaves them empty, as CAPZ's webhooks do by
    /// encoding every field they hold, so that an object leaving them to admission is stored.
    const REQUIRED_EVEN_EMPTY: &'static [&'static str] = &[];

    /// Whether deletions of the kind are validated ([`Rules::validate_delete`]); the webhook
    /// configuration sends them only then.
    const VALIDATES_DELETE: bool = false;

    /// Decides whether the object may be deleted; every deletion may by default.
    fn validate_delete(&self, _ctx: &Context<'_>) -> Verdict {
        Verdict::default()
    }

    /// What validating `operation` of this object (changed from `old` on an update) needs to
    /// know about its Cluster, if anything; the caller looks it up into [`Context::cluster`].
    fn cluster_query(&self, _old: Option<&Self>, _operation: Operation) -> Option<ClusterQuery> {
        None
    }
}
