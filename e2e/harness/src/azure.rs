//! The ARM emulator served over HTTPS and reached as a custom Azure cloud, the way capz-rs's
//! controllers reach it: for tests that run a controller in-process and then look at what it did
//! in Azure.

use std::path::PathBuf;
use std::time::Duration;

use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT};
use arm_emulator::{Config, LoggedRequest, Running};
use azure_core::http::Url;
use capz_kit::azure::models::ArmModel;
use capz_kit::azure::{
    ApiVersion, ArmClient, Category, Cloud, Credential, CustomCloud, HttpClient, ResourceId,
};
use capz_kit::identity::{CustomCloudSettings, IdentitySettings};
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// A running emulator, its CA written to a file, and a client signed in as its default principal.
/// The file goes when this is dropped.
pub struct EmulatedAzure {
    /// The emulator, for its state, request log and faults.
    pub running: Running,
    cloud: Cloud,
    http: HttpClient,
    client: ArmClient,
    dir: PathBuf,
}

impl EmulatedAzure {
    /// Starts an emulator seeded by `config` on a free loopback port.
    ///
    /// # Errors
    /// When it cannot start or its CA cannot be written.
    pub async fn start(config: Config) -> Result<Self> {
        let tls = arm_emulator::tls::Tls::generate(&[]).map_err(|error| azure("make a CA", error))?;
        let running = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), config, &tls)
            .await
            .map_err(|error| azure("start the emulator", error))?;
        let dir = std::env::temp_dir().join(format!("capz-azure-{}", running.address.port()));
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            action: "create",
            path: dir.clone(),
            source,
        })?;
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, &tls.ca_pem).map_err(|source| Error::Io {
            action: "write",
            path: ca_file,
            source,
        })?;
        let base: Url = running
            .base_url()
            .parse()
            .map_err(|error| azure("read the base URL", error))?;
        let cloud = Cloud::Custom(Box::new(
            CustomCloud::new(
                base.clone(),
                base,
                "https://management.azure.com/".to_owned(),
                Some(tls.ca_pem.into_bytes()),
            )
            .map_err(|error| azure("describe the cloud", error))?,
        ));
        let http = cloud
            .http_client(Duration::from_secs(10))
            .map_err(|error| azure("make a client", error))?;
        let client = default_principal_client(&cloud, &http)?;
        Ok(Self {
            running,
            cloud,
            http,
            client,
            dir,
        })
    }

    /// The client the test reads and changes Azure with, signed in as the default principal.
    #[must_use]
    pub fn client(&self) -> &ArmClient {
        &self.client
    }

    /// A new client with a new sign-in, as a restarted controller would build.
    ///
    /// # Errors
    /// When the credential cannot be made.
    pub fn new_client(&self) -> Result<ArmClient> {
        default_principal_client(&self.cloud, &self.http)
    }

    /// The PEM file of the CA the emulator's certificate is signed by.
    #[must_use]
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A controller's identity settings with the emulator as its custom cloud and no credentials
    /// of its own: clusters must name their identity.
    ///
    /// # Errors
    /// When the emulator's address is not a URL.
    pub fn cloud_settings(&self) -> Result<IdentitySettings> {
        self.settings_from(|_| None)
    }

    /// [`EmulatedAzure::cloud_settings`] with the default principal as the controller's own
    /// credentials (`AZURE_CLIENT_ID` and friends), used by clusters that name no identity.
    ///
    /// # Errors
    /// When the emulator's address is not a URL.
    pub fn default_principal_settings(&self) -> Result<IdentitySettings> {
        self.settings_from(|name| match name {
            "AZURE_TENANT_ID" => Some(DEFAULT_TENANT),
            "AZURE_CLIENT_ID" => Some(DEFAULT_CLIENT_ID),
            "AZURE_CLIENT_SECRET" => Some(DEFAULT_CLIENT_SECRET),
            "AZURE_SUBSCRIPTION_ID" => Some(DEFAULT_SUBSCRIPTION),
            _ => None,
        })
    }

    fn settings_from(&self, lookup: impl Fn(&str) -> Option<&'static str>) -> Result<IdentitySettings> {
        let mut settings = IdentitySettings::from_lookup(|name| lookup(name).map(str::to_owned))
            .map_err(|error| azure("read the identity settings", error))?;
        let base: Url = self
            .running
            .base_url()
            .parse()
            .map_err(|error| azure("read the base URL", error))?;
        settings.custom_cloud = Some(CustomCloudSettings {
            resource_manager: base.clone(),
            authority_host: Some(base),
            token_audience: None,
            ca_file: Some(self.ca_file()),
        });
        Ok(settings)
    }

    /// The requests that reached ARM so far, oldest first: sign-ins, metadata and the emulator's
    /// own routes left out.
    #[must_use]
    pub fn arm_requests(&self) -> Vec<LoggedRequest> {
        let mut requests = self.running.emulator.requests();
        requests.retain(|request| request.path.starts_with("/subscriptions/"));
        requests
    }

    /// [`EmulatedAzure::arm_requests`] as `METHOD path`.
    #[must_use]
    pub fn arm_calls(&self) -> Vec<String> {
        self.arm_requests()
            .into_iter()
            .map(|request| format!("{} {}", request.method, request.path))
            .collect()
    }

    /// The ARM calls that changed something (every method but GET).
    #[must_use]
    pub fn writes(&self) -> Vec<String> {
        let mut calls = self.arm_calls();
        calls.retain(|call| !call.starts_with("GET "));
        calls
    }

    /// Whether a DELETE of a path ending in each of `suffixes` reached ARM, in that order (the
    /// first DELETE of each counts).
    #[must_use]
    pub fn deleted_in_order(&self, suffixes: &[&str]) -> bool {
        let deletes: Vec<String> = self
            .arm_requests()
            .into_iter()
            .filter(|request| request.method == "DELETE")
            .map(|request| request.path)
            .collect();
        let positions: Vec<Option<usize>> = suffixes
            .iter()
            .map(|suffix| deletes.iter().position(|path| path.ends_with(suffix)))
            .collect();
        positions.iter().all(Option::is_some) && positions.is_sorted()
    }

    /// Waits until `calls` more ARM calls were made (a controller's resyncs), for at most
    /// `timeout`, and checks that none of them wrote.
    ///
    /// # Errors
    /// When fewer calls came in time, or one of them wrote.
    pub async fn resyncs_write_nothing(&self, calls: usize, timeout: Duration) -> Result<()> {
        let writes = self.writes();
        let until = self.arm_calls().len() + calls;
        let started = std::time::Instant::now();
        while self.arm_calls().len() < until {
            if started.elapsed() > timeout {
                return Err(Error::Timeout {
                    what: format!("{calls} ARM calls of resyncs did not come"),
                    seconds: timeout.as_secs(),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let now = self.writes();
        if now != writes {
            return Err(Error::Azure {
                action: "resync without writing",
                message: format!("a resync wrote: {:?}", &now[writes.len().min(now.len())..]),
            });
        }
        Ok(())
    }

    /// How many `method` requests to ARM paths ending in `suffix` there were so far.
    #[must_use]
    pub fn count(&self, method: &str, suffix: &str) -> usize {
        self.arm_requests()
            .iter()
            .filter(|request| request.method == method && request.path.ends_with(suffix))
            .count()
    }

    /// How many ARM reads (GETs) there were so far.
    #[must_use]
    pub fn reads(&self) -> usize {
        self.arm_requests()
            .iter()
            .filter(|request| request.method == "GET")
            .count()
    }

    /// The resource at `id` read as the model `M`, `None` when it does not exist.
    ///
    /// # Errors
    /// When `id` is not a resource id or ARM fails otherwise.
    pub async fn get<M: ArmModel>(&self, id: &str) -> Result<Option<M>> {
        self.get_at(id, &M::API_VERSION).await
    }

    /// The resource at `id` as Azure answers it at `api_version`, `None` when it does not exist.
    ///
    /// # Errors
    /// When `id` is not a resource id or ARM fails otherwise.
    pub async fn get_at<T: DeserializeOwned>(&self, id: &str, api_version: &ApiVersion) -> Result<Option<T>> {
        let id: ResourceId = id.parse().map_err(|error| azure("read a resource id", error))?;
        match self.client.get::<T>(&id, api_version).await {
            Ok(body) => Ok(Some(body)),
            Err(error) if error.category() == Category::NotFound => Ok(None),
            Err(error) => Err(azure("read a resource", error)),
        }
    }
}

impl Drop for EmulatedAzure {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn default_principal_client(cloud: &Cloud, http: &HttpClient) -> Result<ArmClient> {
    let credential = Credential::client_secret(
        cloud,
        http,
        DEFAULT_TENANT,
        DEFAULT_CLIENT_ID,
        DEFAULT_CLIENT_SECRET,
    )
    .map_err(|error| azure("make the default principal's credential", error))?;
    Ok(ArmClient::new(cloud, credential, http, "test"))
}

fn azure(action: &'static str, error: impl std::fmt::Display) -> Error {
    Error::Azure {
        action,
        message: error.to_string(),
    }
}
