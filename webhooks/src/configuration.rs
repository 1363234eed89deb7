//! The MutatingWebhookConfiguration and ValidatingWebhookConfiguration that make the API server
//! call the server, generated from the same route table the server serves.
//!
//! Every kind gets one webhook in each: CAPZ's name (`default.<kind>.<group>`,
//! `validation.<kind>.<group>`), CAPZ's path, `CREATE` and `UPDATE` of the kind's resource in
//! `infrastructure.cluster.x-k8s.io/v1beta1` (not its `status`), and `DELETE` too for validating
//! the kinds whose deletions are checked (the AKS node pools and their templates), `sideEffects: None` (so dry-run
//! requests are admitted too), `admissionReviewVersions: [v1]` and `failurePolicy: Fail`: an
//! object is never stored unchecked.

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::ObjectMeta;

use crate::hook::Hook;
use crate::routes::{Route, Routes};

/// The name of the mutating configuration, CAPZ's.
pub const MUTATING_NAME: &str = "capz-mutating-webhook-configuration";
/// The name of the validating configuration, CAPZ's.
pub const VALIDATING_NAME: &str = "capz-validating-webhook-configuration";

/// Where the API server reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A base URL such as `https://127.0.0.1:9443`; each webhook's path is appended.
    Url(String),
    /// A Service in the cluster.
    Service {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its port; 443 when unset.
        port: Option<i32>,
    },
}

/// How the configurations reach the server and which objects they cover.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    /// Where the server is.
    pub endpoint: Endpoint,
    /// The PEM certificates the API server trusts for the server; unset when something else
    /// (cert-manager's CA injector) fills it in.
    pub ca_bundle: Option<Vec<u8>>,
    /// Only objects in namespaces this selects; all namespaces when unset.
    pub namespace_selector: Option<LabelSelector>,
}

impl Registration {
    /// How the API server calls `path` of the server.
    #[must_use]
    pub fn client_config(&self, path: String) -> WebhookClientConfig {
        let ca_bundle = self.ca_bundle.clone().map(ByteString);
        match &self.endpoint {
            Endpoint::Url(base) => WebhookClientConfig {
                url: Some(format!("{}{path}", base.trim_end_matches('/'))),
                ca_bundle,
                service: None,
            },
            Endpoint::Service {
                namespace,
                name,
                port,
            } => WebhookClientConfig {
                url: None,
                ca_bundle,
                service: Some(ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(path),
                    port: *port,
                }),
            },
        }
    }
}

fn rules(route: &Route, hook: Hook) -> Vec<RuleWithOperations> {
    let mut operations = vec!["CREATE".to_owned(), "UPDATE".to_owned()];
    if hook == Hook::Validate && route.validates_delete() {
        operations.push("DELETE".to_owned());
    }
    vec![RuleWithOperations {
        api_groups: Some(vec![route.group().to_owned()]),
        api_versions: Some(vec![route.version().to_owned()]),
        operations: Some(operations),
        resources: Some(vec![route.plural().to_owned()]),
        scope: None,
    }]
}

/// The defaulting webhooks of `routes`, in a configuration named `name`.
#[must_use]
pub fn mutating(routes: &Routes, name: &str, registration: &Registration) -> MutatingWebhookConfiguration {
    MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        webhooks: Some(
            routes
                .iter()
                .map(|route| MutatingWebhook {
                    name: route.webhook_name(Hook::Mutate),
                    client_config: registration.client_config(route.path(Hook::Mutate)),
                    rules: Some(rules(route, Hook::Mutate)),
                    side_effects: "None".to_owned(),
                    admission_review_versions: vec!["v1".to_owned()],
                    failure_policy: Some("Fail".to_owned()),
                    namespace_selector: registration.namespace_selector.clone(),
                    ..MutatingWebhook::default()
                })
                .collect(),
        ),
    }
}

/// The validating webhooks of `routes`, in a configuration named `name`.
#[must_use]
pub fn validating(
    routes: &Routes,
    name: &str,
    registration: &Registration,
) -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        webhooks: Some(
            routes
                .iter()
                .map(|route| ValidatingWebhook {
                    name: route.webhook_name(Hook::Validate),
                    client_config: registration.client_config(route.path(Hook::Validate)),
                    rules: Some(rules(route, Hook::Validate)),
                    side_effects: "None".to_owned(),
                    admission_review_versions: vec!["v1".to_owned()],
                    failure_policy: Some("Fail".to_owned()),
                    namespace_selector: registration.namespace_selector.clone(),
                    ..ValidatingWebhook::default()
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes;

    #[test]
    fn every_route_is_registered_with_its_path() {
        let routes = routes::all();
        let registration = Registration {
            endpoint: Endpoint::Url("https://127.0.0.1:9443/".to_owned()),
            ca_bundle: Some(b"PEM".to_vec()),
            namespace_selector: None,
        };
        let mutating = mutating(&routes, MUTATING_NAME, &registration);
        let validating = validating(&routes, VALIDATING_NAME, &registration);
        let mutating = mutating.webhooks.unwrap();
        let validating = validating.webhooks.unwrap();
        assert_eq!(mutating.len(), routes.iter().count());
        assert_eq!(validating.len(), routes.iter().count());
        let hook = &validating[0];
        assert_eq!(
            hook.name,
            "validation.azureclusteridentity.infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(
            hook.client_config.url.as_deref(),
            Some(
                "https://127.0.0.1:9443/validate-infrastructure-cluster-x-k8s-io-v1beta1-azureclusteridentity"
            )
        );
        assert_eq!(hook.client_config.ca_bundle.as_ref().unwrap().0, b"PEM");
        assert_eq!(hook.side_effects, "None");
        assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
        assert_eq!(hook.admission_review_versions, ["v1"]);
        let rule = &hook.rules.as_ref().unwrap()[0];
        assert_eq!(
            rule.resources.as_deref(),
            Some(&["azureclusteridentities".to_owned()][..])
        );
        assert_eq!(
            rule.api_groups.as_deref(),
            Some(&["infrastructure.cluster.x-k8s.io".to_owned()][..])
        );
        assert_eq!(rule.api_versions.as_deref(), Some(&["v1beta1".to_owned()][..]));
        assert_eq!(
            rule.operations.as_deref(),
            Some(&["CREATE".to_owned(), "UPDATE".to_owned()][..])
        );

        let pool = validating
            .iter()
            .find(|hook| hook.name.starts_with("validation.azuremanagedmachinepool."))
            .unwrap();
        assert_eq!(
            pool.rules.as_ref().unwrap()[0].operations.as_deref(),
            Some(&["CREATE".to_owned(), "UPDATE".to_owned(), "DELETE".to_owned()][..])
        );
        let pool = mutating
            .iter()
            .find(|hook| hook.name.starts_with("default.azuremanagedmachinepool."))
            .unwrap();
        assert_eq!(
            pool.rules.as_ref().unwrap()[0].operations.as_ref().unwrap().len(),
            2
        );

        let service = Registration {
            endpoint: Endpoint::Service {
                namespace: "capz-system".to_owned(),
                name: "capz-webhook-service".to_owned(),
                port: None,
            },
            ca_bundle: None,
            namespace_selector: None,
        };
        let hook = &self::mutating(&routes, MUTATING_NAME, &service).webhooks.unwrap()[0];
        let reference = hook.client_config.service.as_ref().unwrap();
        assert_eq!(
            reference.path.as_deref(),
            Some("/mutate-infrastructure-cluster-x-k8s-io-v1beta1-azureclusteridentity")
        );
        assert_eq!(hook.client_config.url, None);
        assert_eq!(hook.client_config.ca_bundle, None);
    }
}
