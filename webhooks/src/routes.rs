//! The route table: which kinds the server admits, under which paths, and what each needs.
//!
//! It is the one source of truth for both sides of a webhook: the server routes requests by it
//! ([`crate::server`]), and the webhook configurations the API server calls through are generated
//! from it ([`crate::configuration`]), so a path can never be served without being registered, or
//! registered without being served.
//!
//! Paths are CAPZ's (kubebuilder's): `/mutate-<group with dashes>-<version>-<lowercase kind>` and
//! `/validate-...`, so configurations written for CAPZ keep working.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Bytes;
use capz_api::AzureClusterIdentity;
use capz_rules::Rules;

use crate::hook::{Hook, ValidationLookup};
use crate::review::{self, Admission, Answer};

/// A handler: one review of a kind, from the request body to the answer.
pub(crate) type Handler =
    Arc<dyn Fn(Arc<Admission>, Bytes) -> Pin<Box<dyn Future<Output = Answer> + Send>> + Send + Sync>;

/// One admitted kind: its names, its two paths and its handlers.
#[derive(Clone)]
pub struct Route {
    kind: String,
    group: String,
    version: String,
    plural: String,
    validation_lookup: ValidationLookup,
    validates_delete: bool,
    pub(crate) mutate: Handler,
    pub(crate) validate: Handler,
}

impl fmt::Debug for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Route")
            .field("kind", &self.kind)
            .field("group", &self.group)
            .field("version", &self.version)
            .field("plural", &self.plural)
            .field("validation_lookup", &self.validation_lookup)
            .field("validates_delete", &self.validates_delete)
            .finish_non_exhaustive()
    }
}

impl Route {
    fn of<K>(validation_lookup: ValidationLookup) -> Self
    where
        K: Rules + Send + Sync + 'static,
    {
        let mutate: Handler = Arc::new(move |admission, body| {
            Box::pin(async move { review::mutate::<K>(&admission, &body).await })
        });
        let validate: Handler = Arc::new(move |admission, body| {
            Box::pin(async move { review::validate::<K>(&admission, validation_lookup, &body).await })
        });
        Self {
            kind: K::kind(&()).into_owned(),
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
            validation_lookup,
            validates_delete: K::VALIDATES_DELETE,
            mutate,
            validate,
        }
    }

    /// Whether the validating webhook is sent deletions too ([`Rules::VALIDATES_DELETE`]).
    #[must_use]
    pub fn validates_delete(&self) -> bool {
        self.validates_delete
    }

    /// The kind, such as `AzureClusterIdentity`.
    #[must_use]
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The API group.
    #[must_use]
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The API version admitted.
    #[must_use]
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The resource name, such as `azureclusteridentities`.
    #[must_use]
    pub fn plural(&self) -> &str {
        &self.plural
    }

    /// What validation looks up first.
    #[must_use]
    pub fn validation_lookup(&self) -> ValidationLookup {
        self.validation_lookup
    }

    /// The path of `hook`, such as
    /// `/validate-infrastructure-cluster-x-k8s-io-v1beta1-azureclusteridentity`.
    #[must_use]
    pub fn path(&self, hook: Hook) -> String {
        format!(
            "/{}-{}-{}-{}",
            hook.as_str(),
            self.group.replace('.', "-"),
            self.version,
            self.kind.to_ascii_lowercase()
        )
    }

    /// The webhook's name in its configuration, CAPZ's: `default.<lowercase kind>.<group>` for
    /// defaulting, `validation.<lowercase kind>.<group>` for validation.
    #[must_use]
    pub fn webhook_name(&self, hook: Hook) -> String {
        let prefix = match hook {
            Hook::Mutate => "default",
            Hook::Validate => "validation",
        };
        format!("{prefix}.{}.{}", self.kind.to_ascii_lowercase(), self.group)
    }

    /// Answers one review of `hook` whose request body is `body`: the generic handler every
    /// path of the server calls, without HTTP around it.
    pub fn review(
        &self,
        hook: Hook,
        admission: Arc<Admission>,
        body: Bytes,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send>> {
        (self.handler(hook))(admission, body)
    }

    pub(crate) fn handler(&self, hook: Hook) -> &Handler {
        match hook {
            Hook::Mutate => &self.mutate,
            Hook::Validate => &self.validate,
        }
    }
}

/// The kinds a server admits, in registration order.
#[derive(Clone, Debug, Default)]
pub struct Routes(Vec<Route>);

impl Routes {
    /// No kinds.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Admits `K` too: defaulting and validation by its [`Rules`], validation after
    /// `validation_lookup`.
    #[must_use]
    pub fn kind<K>(mut self, validation_lookup: ValidationLookup) -> Self
    where
        K: Rules + Send + Sync + 'static,
    {
        self.0.push(Route::of::<K>(validation_lookup));
        self
    }

    /// The routes, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Route> {
        self.0.iter()
    }

    /// Every path served, with its route and hook.
    pub fn paths(&self) -> impl Iterator<Item = (String, &Route, Hook)> {
        self.0
            .iter()
            .flat_map(|route| [Hook::Mutate, Hook::Validate].map(|hook| (route.path(hook), route, hook)))
    }

    /// Whether no kind is admitted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Every kind capz-rs admits: what the server serves and the configurations register.
///
/// Registering a kind is one line here, once `capz_rules` has its `impl Rules`.
#[must_use]
pub fn all() -> Routes {
    Routes::new()
        .kind::<AzureClusterIdentity>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureCluster>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureClusterTemplate>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureMachine>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureMachineTemplate>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureMachinePool>(ValidationLookup::PoolOwner)
        .kind::<capz_api::AzureMachinePoolMachine>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureManagedControlPlane>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureManagedControlPlaneTemplate>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureManagedCluster>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureManagedClusterTemplate>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureManagedMachinePool>(ValidationLookup::Nothing)
        .kind::<capz_api::AzureManagedMachinePoolTemplate>(ValidationLookup::Nothing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_are_capzs() {
        let routes = all();
        let identity = routes.iter().next().unwrap();
        assert_eq!(identity.kind(), "AzureClusterIdentity");
        assert_eq!(identity.plural(), "azureclusteridentities");
        assert_eq!(
            identity.path(Hook::Mutate),
            "/mutate-infrastructure-cluster-x-k8s-io-v1beta1-azureclusteridentity"
        );
        assert_eq!(
            identity.path(Hook::Validate),
            "/validate-infrastructure-cluster-x-k8s-io-v1beta1-azureclusteridentity"
        );
        assert_eq!(
            identity.webhook_name(Hook::Validate),
            "validation.azureclusteridentity.infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(
            identity.webhook_name(Hook::Mutate),
            "default.azureclusteridentity.infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(routes.paths().count(), 2 * routes.iter().count());
    }
}
