//! capz-rs's admission webhooks against the plane: the webhook server runs in the test's own
//! process (on the test's runtime), with a serving certificate from the plane's CA, and the API
//! server calls it through a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration
//! generated from the server's own route table, pointing at `https://127.0.0.1:<port>` with the
//! CA as `caBundle`.
//!
//! In a cluster the server runs as a Pod behind a Service, its certificate from cert-manager
//! (`deploy/webhooks`, see docs/webhooks.md). Running it in-process instead of as the built binary costs no process
//! start and lets a test read what it answered.
//!
//! The configurations can be limited to one namespace, so that tests each with a server of their
//! own run side by side. The API server picks new configurations up asynchronously, so before
//! returning the harness makes sure it calls both: each configuration carries one more webhook,
//! for `DELETE`s of a labelled probe ConfigMap in that namespace, and the harness dry-run deletes
//! that ConfigMap until the server has answered for both (a deletion is admitted by every route).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use capz_kit::cli::Tls;
use capz_rules::Features;
use capz_webhooks::configuration::{self, Endpoint, Registration};
use capz_webhooks::{Config, Hook, Routes, Server};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};

use crate::error::{Error, Result};
use crate::pki::KeyAndCert;
use crate::plane::Plane;

/// The label of the probe ConfigMap.
const PROBE_LABEL: &str = "capz-harness/webhook-probe";
/// The name of the probe ConfigMap.
const PROBE_NAME: &str = "capz-harness-webhook-probe";
/// How long the API server may take to call new configurations.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(30);

/// What webhook server to start, and for which objects.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    /// The kinds served and registered; every kind capz-rs admits by default.
    pub routes: Routes,
    /// Only objects in this namespace go through the server; all namespaces when unset (the
    /// test then takes `cluster_scoped()`).
    pub namespace: Option<String>,
    /// The feature gates the rules see.
    pub features: Features,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        Self {
            routes: capz_webhooks::routes::all(),
            namespace: None,
            features: Features::default(),
        }
    }
}

impl WebhookOptions {
    /// Every kind capz-rs admits, for objects in `namespace`.
    #[must_use]
    pub fn in_namespace(namespace: &str) -> Self {
        Self {
            namespace: Some(namespace.to_owned()),
            ..Self::default()
        }
    }
}

/// A webhook server the plane calls. Call [`Webhooks::stop`] when done: it removes the
/// configurations (dropping only stops the server, and the API server then refuses what the
/// configurations cover).
pub struct Webhooks {
    server: Server,
    client: Client,
    cert_dir: PathBuf,
    mutating: String,
    validating: String,
    probe_namespace: String,
}

impl Plane {
    /// Starts capz-rs's webhook server in this process and registers it with the API server,
    /// returning once the API server calls it.
    ///
    /// # Errors
    /// When the server cannot start, the API server refuses the configurations, or does not call
    /// them in time.
    pub async fn start_webhooks(&self, options: WebhookOptions) -> Result<Webhooks> {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let routes = options.routes;
        let Some(first) = routes.iter().next() else {
            return Err(Error::Manifest {
                path: "the webhook options".into(),
                message: "no kind to admit".into(),
            });
        };
        let (probe_mutate, probe_validate) = (first.path(Hook::Mutate), first.path(Hook::Validate));
        let cert_dir = self
            .dir()
            .join(format!("webhooks-{}", STARTED.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&cert_dir).map_err(Error::io("create", &cert_dir))?;
        self.authority()
            .serving("capz-webhooks", &[])?
            .write_to(&cert_dir)?;
        let client = self.client().await?;
        let server = Server::start(
            Config {
                address: ([127, 0, 0, 1], 0).into(),
                cert_dir: cert_dir.clone(),
                features: options.features,
                tls: Tls::default(),
                client: Some(client.clone()),
            },
            &routes,
        )
        .await
        .map_err(|err| Error::Webhooks(err.to_string()))?;
        let port = server.address().port();
        let namespace_selector = options.namespace.as_ref().map(|namespace| LabelSelector {
            match_labels: Some([("kubernetes.io/metadata.name".to_owned(), namespace.clone())].into()),
            match_expressions: None,
        });
        let registration = Registration {
            endpoint: Endpoint::Url(format!("https://127.0.0.1:{port}")),
            ca_bundle: Some(self.authority().cert_pem().as_bytes().to_vec()),
            namespace_selector: namespace_selector.clone(),
        };
        let mutating_name = format!("{}-{port}", configuration::MUTATING_NAME);
        let validating_name = format!("{}-{port}", configuration::VALIDATING_NAME);
        let mut mutating = configuration::mutating(&routes, &mutating_name, &registration);
        let mut validating = configuration::validating(&routes, &validating_name, &registration);
        mutating.webhooks.get_or_insert_default().push(MutatingWebhook {
            name: "probe.mutating.capz-harness.x-k8s.io".to_owned(),
            client_config: registration.client_config(probe_mutate),
            rules: Some(probe_rules()),
            side_effects: "None".to_owned(),
            admission_review_versions: vec!["v1".to_owned()],
            failure_policy: Some("Fail".to_owned()),
            namespace_selector: namespace_selector.clone(),
            object_selector: Some(probe_selector()),
            ..MutatingWebhook::default()
        });
        validating
            .webhooks
            .get_or_insert_default()
            .push(ValidatingWebhook {
                name: "probe.validating.capz-harness.x-k8s.io".to_owned(),
                client_config: registration.client_config(probe_validate),
                rules: Some(probe_rules()),
                side_effects: "None".to_owned(),
                admission_review_versions: vec!["v1".to_owned()],
                failure_policy: Some("Fail".to_owned()),
                namespace_selector,
                object_selector: Some(probe_selector()),
                ..ValidatingWebhook::default()
            });
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .create(&PostParams::default(), &mutating)
            .await?;
        let webhooks = Webhooks {
            server,
            client: client.clone(),
            cert_dir,
            mutating: mutating_name,
            validating: validating_name,
            probe_namespace: options.namespace.unwrap_or_else(|| "default".to_owned()),
        };
        // From here on, dropping `webhooks` would leave the configurations: remove them on failure.
        let registered = async {
            Api::<ValidatingWebhookConfiguration>::all(client.clone())
                .create(&PostParams::default(), &validating)
                .await?;
            webhooks.wait_called().await
        };
        match registered.await {
            Ok(()) => Ok(webhooks),
            Err(err) => {
                let _ = webhooks.stop().await;
                Err(err)
            }
        }
    }
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("address", &self.server.address())
            .field("cert_dir", &self.cert_dir)
            .field("mutating", &self.mutating)
            .field("validating", &self.validating)
            .finish_non_exhaustive()
    }
}

/// The probe's rules: deletions of ConfigMaps.
fn probe_rules() -> Vec<RuleWithOperations> {
    vec![RuleWithOperations {
        api_groups: Some(vec![String::new()]),
        api_versions: Some(vec!["v1".to_owned()]),
        operations: Some(vec!["DELETE".to_owned()]),
        resources: Some(vec!["configmaps".to_owned()]),
        scope: None,
    }]
}

fn probe_selector() -> LabelSelector {
    LabelSelector {
        match_labels: Some([(PROBE_LABEL.to_owned(), "true".to_owned())].into()),
        match_expressions: None,
    }
}

impl Webhooks {
    /// Where the server listens.
    #[must_use]
    pub fn address(&self) -> std::net::SocketAddr {
        self.server.address()
    }

    /// The server, to read what it answered.
    #[must_use]
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The directory holding the server's `tls.crt` and `tls.key`.
    #[must_use]
    pub fn cert_dir(&self) -> &Path {
        &self.cert_dir
    }

    /// The names of the mutating and the validating configuration.
    #[must_use]
    pub fn configuration_names(&self) -> (&str, &str) {
        (&self.mutating, &self.validating)
    }

    /// Writes a new serving certificate from `plane`'s CA into the server's directory, as
    /// cert-manager renews one, and returns it.
    ///
    /// # Errors
    /// When the certificate cannot be made or written.
    pub fn rotate_certificate(&self, plane: &Plane) -> Result<KeyAndCert> {
        let renewed = plane.authority().serving("capz-webhooks", &[])?;
        renewed.write_to(&self.cert_dir)?;
        Ok(renewed)
    }

    /// Dry-run deletes the probe ConfigMap until the server has answered both of its webhooks.
    async fn wait_called(&self) -> Result<()> {
        let config_maps = Api::<ConfigMap>::namespaced(self.client.clone(), &self.probe_namespace);
        let mut probe = ConfigMap::default();
        probe.metadata.name = Some(PROBE_NAME.to_owned());
        probe.metadata.labels = Some([(PROBE_LABEL.to_owned(), "true".to_owned())].into());
        match config_maps.create(&PostParams::default(), &probe).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(err) => return Err(err.into()),
        }
        let before = (
            self.server.answered(Hook::Mutate),
            self.server.answered(Hook::Validate),
        );
        let dry_run = DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        };
        let started = Instant::now();
        loop {
            // Refused while only one configuration is in effect and the other webhook is not yet
            // called; what counts is what the server saw.
            let _ = config_maps.delete(PROBE_NAME, &dry_run).await;
            let now = (
                self.server.answered(Hook::Mutate),
                self.server.answered(Hook::Validate),
            );
            if now.0 > before.0 && now.1 > before.1 {
                return Ok(());
            }
            if started.elapsed() > REGISTER_TIMEOUT {
                return Err(Error::Timeout {
                    what: format!(
                        "the API server did not call the webhook server on port {} ({} mutating, {} validating reviews)",
                        self.address().port(),
                        now.0 - before.0,
                        now.1 - before.1
                    ),
                    seconds: REGISTER_TIMEOUT.as_secs(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Removes the configurations and the probe, then stops the server once its connections
    /// are done.
    ///
    /// # Errors
    /// When a configuration cannot be deleted; the server stops all the same.
    pub async fn stop(self) -> Result<()> {
        let params = DeleteParams::default();
        let _ = Api::<ConfigMap>::namespaced(self.client.clone(), &self.probe_namespace)
            .delete(PROBE_NAME, &params)
            .await;
        let mutating = Api::<MutatingWebhookConfiguration>::all(self.client.clone())
            .delete(&self.mutating, &params)
            .await;
        let validating = Api::<ValidatingWebhookConfiguration>::all(self.client.clone())
            .delete(&self.validating, &params)
            .await;
        self.server.shutdown().await;
        for deleted in [mutating.map(|_| ()), validating.map(|_| ())] {
            match deleted {
                Ok(()) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }
}
