//! The read-only Cluster API views read objects as Cluster API v1.14 stores them (v1beta2).

use capz_api::capi::{Cluster, Machine, MachinePool};

const CLUSTER: &str = r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: prod
  namespace: default
spec:
  clusterNetwork:
    apiServerPort: 8443
    pods:
      cidrBlocks: ["192.168.0.0/16"]
  controlPlaneRef:
    apiGroup: controlplane.cluster.x-k8s.io
    kind: KubeadmControlPlane
    name: prod-control-plane
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: AzureCluster
    name: prod
  paused: true
status:
  initialization:
    infrastructureProvisioned: true
  phase: Provisioned
  conditions:
  - type: Available
    status: "False"
    reason: NotAvailable
    lastTransitionTime: "2026-11-01T10:00:00Z"
"#;

const MACHINE: &str = r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: prod-control-plane-x7k2p
  namespace: default
spec:
  clusterName: prod
  bootstrap:
    configRef:
      apiGroup: bootstrap.cluster.x-k8s.io
      kind: KubeadmConfig
      name: prod-control-plane-x7k2p
    dataSecretName: prod-control-plane-x7k2p
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: AzureMachine
    name: prod-control-plane-x7k2p
  version: v1.34.1
  failureDomain: "2"
status:
  nodeRef:
    name: prod-control-plane-x7k2p
"#;

const MACHINE_POOL: &str = r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachinePool
metadata:
  name: prod-mp-0
  namespace: default
spec:
  clusterName: prod
  replicas: 3
  failureDomains: ["1", "2"]
  template:
    spec:
      clusterName: prod
      bootstrap:
        dataSecretName: prod-mp-0-bootstrap
      infrastructureRef:
        apiGroup: infrastructure.cluster.x-k8s.io
        kind: AzureMachinePool
        name: prod-mp-0
      version: v1.34.1
"#;

#[test]
fn a_cluster_reads_with_its_milestones_and_references() {
    let cluster: Cluster = serde_saphyr::from_str(CLUSTER).unwrap();
    assert!(cluster.is_paused());
    assert!(cluster.infrastructure_provisioned());
    assert!(!cluster.control_plane_initialized());
    assert_eq!(cluster.api_server_port(), 8443);
    let infra = cluster.spec.infrastructure_ref.unwrap();
    assert!(infra.is("infrastructure.cluster.x-k8s.io", "AzureCluster"));
    assert_eq!(infra.name, "prod");
}

#[test]
fn an_empty_cluster_has_safe_defaults() {
    let cluster: Cluster = serde_saphyr::from_str(
        "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: c}\nspec: {}\n",
    )
    .unwrap();
    assert!(!cluster.is_paused());
    assert!(!cluster.infrastructure_provisioned());
    assert_eq!(cluster.api_server_port(), 6443);
}

#[test]
fn a_machine_reads_with_its_bootstrap_secret_and_placement() {
    let machine: Machine = serde_saphyr::from_str(MACHINE).unwrap();
    assert_eq!(
        machine.bootstrap_data_secret_name(),
        Some("prod-control-plane-x7k2p")
    );
    assert_eq!(machine.spec.failure_domain.as_deref(), Some("2"));
    assert_eq!(machine.spec.version.as_deref(), Some("v1.34.1"));
    assert_eq!(
        machine.status.unwrap().node_ref.unwrap().name,
        "prod-control-plane-x7k2p"
    );
}

#[test]
fn a_machine_without_bootstrap_data_says_so() {
    let mut machine: Machine = serde_saphyr::from_str(MACHINE).unwrap();
    machine.spec.bootstrap.data_secret_name = None;
    assert_eq!(machine.bootstrap_data_secret_name(), None);
}

#[test]
fn a_machine_pool_reads_with_its_template() {
    let pool: MachinePool = serde_saphyr::from_str(MACHINE_POOL).unwrap();
    assert_eq!(pool.spec.replicas, Some(3));
    assert_eq!(
        pool.spec.failure_domains.as_deref(),
        Some(&["1".to_owned(), "2".to_owned()][..])
    );
    let template = &pool.spec.template.spec;
    assert_eq!(
        template.bootstrap.data_secret_name.as_deref(),
        Some("prod-mp-0-bootstrap")
    );
    assert!(
        template
            .infrastructure_ref
            .as_ref()
            .unwrap()
            .is("infrastructure.cluster.x-k8s.io", "AzureMachinePool")
    );
}
