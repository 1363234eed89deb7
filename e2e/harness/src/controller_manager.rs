//! kube-controller-manager beside the plane, with only the controllers a management cluster
//! without nodes needs: namespace deletion, garbage collection by owner references, the default
//! ServiceAccount of each namespace, aggregated ClusterRoles and the `kube-root-ca.crt` ConfigMap.
//! Workload controllers (Deployments, ReplicaSets, ...) stay off: nothing would run their Pods.

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::Api;

use crate::bins::KubeBinaries;
use crate::error::{Error, Result};
use crate::plane::Plane;

const CONTROLLERS: &str =
    "namespace,garbagecollector,serviceaccount,clusterrole-aggregation,root-ca-cert-publisher";

impl Plane {
    /// Starts kube-controller-manager; [`Plane::wait_controller_manager`] waits until it works.
    ///
    /// # Errors
    /// When the binary is missing (`KUBEBUILDER_ASSETS` directories usually lack it) or cannot
    /// start.
    pub fn start_controller_manager(&mut self) -> Result<()> {
        let binaries = KubeBinaries::locate()?;
        let binary = binaries.binary("kube-controller-manager");
        if !binary.is_file() {
            return Err(Error::MissingBinary {
                binary: "kube-controller-manager",
                dir: binaries.dir().to_owned(),
                recipe: "kube-bins",
            });
        }
        let args = vec![
            format!("--kubeconfig={}", self.kubeconfig().display()),
            format!("--controllers={CONTROLLERS}"),
            format!("--root-ca-file={}", self.ca_file().display()),
            // Nothing probes it; serving would need a port and delegated authentication.
            "--secure-port=0".to_owned(),
            "--leader-elect=false".to_owned(),
        ];
        self.spawn("kube-controller-manager", &binary, &args)
    }

    /// Waits until kube-controller-manager acts: the `default` namespace gets its ServiceAccount.
    ///
    /// # Errors
    /// When it stops, or has not acted within a minute.
    pub async fn wait_controller_manager(&mut self, client: &Client) -> Result<()> {
        let accounts = Api::<ServiceAccount>::namespaced(client.clone(), "default");
        self.wait_until("kube-controller-manager did not act", async || {
            matches!(accounts.get_opt("default").await, Ok(Some(_)))
        })
        .await
    }
}
