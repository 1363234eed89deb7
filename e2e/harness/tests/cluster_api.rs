//! Cluster API installed by `clusterctl init` and its managers beside the plane: v1beta1
//! manifests, as CAPZ flavors are written, are admitted, converted, stored and reconciled, and
//! clusterctl works against the plane.

use std::time::{Duration, Instant};

use capz_harness::{Clusterctl, Plane};
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject};

const CLUSTER: &str = r"
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: smoke
spec:
  clusterNetwork:
    pods:
      cidrBlocks: [192.168.0.0/16]
  infrastructureRef:
    apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
    kind: AzureCluster
    name: smoke
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureCluster
metadata:
  name: smoke
spec:
  location: westeurope
  resourceGroup: smoke
";

/// A template as `clusterctl generate cluster --from` takes it.
const TEMPLATE: &str = r#"
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: "${CLUSTER_NAME}"
  namespace: "${NAMESPACE}"
spec:
  infrastructureRef:
    apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
    kind: AzureCluster
    name: "${CLUSTER_NAME}"
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureCluster
metadata:
  name: "${CLUSTER_NAME}"
  namespace: "${NAMESPACE}"
spec:
  location: "${AZURE_LOCATION:=westeurope}"
  resourceGroup: "${CLUSTER_NAME}"
"#;

// One test, since each plane with Cluster API costs its own start-up.
#[tokio::test]
async fn cluster_api_installed_by_clusterctl_reconciles_v1beta1_manifests() {
    let mut plane = Plane::start().await.unwrap();
    let started = Instant::now();
    let clusterctl = plane.start_cluster_api().await.unwrap();
    eprintln!("Cluster API installed and served in {:?}", started.elapsed());
    let client = plane.client().await.unwrap();
    the_inventory_lists_the_providers(&client, &clusterctl)
        .await
        .unwrap();
    let namespace = capz_harness::with_temp_namespace(&client, async |namespace| {
        let applied = capz_harness::apply_yaml(&client, &namespace, CLUSTER)
            .await
            .unwrap();
        assert_eq!(
            applied[0].types.as_ref().unwrap().api_version,
            "cluster.x-k8s.io/v1beta1"
        );
        let applied_at = Instant::now();

        // The same Cluster through v1beta2: the conversion webhook moved the reference to a
        // contract-versioned one.
        let v1beta2 = capz_harness::resource(&client, "cluster.x-k8s.io", "v1beta2", "Cluster")
            .await
            .unwrap();
        let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &v1beta2);
        let cluster = clusters.get("smoke").await.unwrap();
        assert_eq!(
            cluster.data["spec"]["infrastructureRef"]["apiGroup"],
            "infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(cluster.data["spec"]["infrastructureRef"]["kind"], "AzureCluster");
        assert_eq!(
            cluster.data["spec"]["clusterNetwork"]["pods"]["cidrBlocks"][0],
            "192.168.0.0/16"
        );

        let azure = capz_harness::resource(
            &client,
            "infrastructure.cluster.x-k8s.io",
            "v1beta1",
            "AzureCluster",
        )
        .await
        .unwrap();
        let azure_clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &azure);
        let owned = capz_harness::wait_for(
            &azure_clusters,
            "smoke",
            "an owner reference to Cluster smoke",
            Duration::from_secs(30),
            |object| {
                object
                    .owner_references()
                    .iter()
                    .any(|owner| owner.kind == "Cluster" && owner.name == "smoke")
            },
        )
        .await
        .unwrap();
        eprintln!(
            "the owner reference came {:?} after the apply",
            applied_at.elapsed()
        );
        assert_eq!(owned.data["spec"]["location"], "westeurope");
        assert_eq!(
            owned
                .labels()
                .get("cluster.x-k8s.io/cluster-name")
                .map(String::as_str),
            Some("smoke")
        );
        clusterctl_reads_the_cluster(&clusterctl, &namespace)
            .await
            .unwrap();
        the_flavors_are_generated_and_applied(&client, &clusterctl, &namespace)
            .await
            .unwrap();
        namespace
    })
    .await
    .unwrap();

    // kube-controller-manager finishes the namespace's deletion, as in any cluster.
    let namespaces = Api::<Namespace>::all(client.clone());
    let deadline = Instant::now() + Duration::from_mins(1);
    while namespaces.get_opt(&namespace).await.unwrap().is_some() {
        assert!(
            Instant::now() < deadline,
            "namespace {namespace} was not deleted in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

type Outcome = Result<(), Box<dyn std::error::Error>>;

/// capz-rs's flavors, from the provider repository clusterctl reads, with the variables the book
/// tells users to set: every object each holds is accepted by the API server (our CRDs' schemas,
/// Cluster API's webhooks), with the names the identity controller's `azure.json` Secrets take.
async fn the_flavors_are_generated_and_applied(
    client: &kube::Client,
    clusterctl: &Clusterctl,
    namespace: &str,
) -> Outcome {
    let applied = a_flavor_is_generated_and_applied(client, clusterctl, namespace, None, "flavored").await?;
    assert_eq!(
        applied,
        [
            ("Cluster", "flavored"),
            ("AzureCluster", "flavored"),
            ("KubeadmControlPlane", "flavored-control-plane"),
            ("AzureMachineTemplate", "flavored-control-plane"),
            ("MachineDeployment", "flavored-md-0"),
            ("AzureMachineTemplate", "flavored-md-0"),
            ("KubeadmConfigTemplate", "flavored-md-0"),
            ("AzureClusterIdentity", "cluster-identity"),
        ]
        .map(|(kind, name)| (kind.to_owned(), name.to_owned()))
    );

    // The machinepool flavors: the default flavor's cluster with its workers in MachinePools.
    let pool = |cluster: &str, pool: &str| {
        [
            ("MachinePool", format!("{cluster}-{pool}")),
            ("AzureMachinePool", format!("{cluster}-{pool}")),
            ("KubeadmConfig", format!("{cluster}-{pool}")),
        ]
    };
    let cluster = |name: &str| {
        [
            ("Cluster", name.to_owned()),
            ("AzureCluster", name.to_owned()),
            ("KubeadmControlPlane", format!("{name}-control-plane")),
            ("AzureMachineTemplate", format!("{name}-control-plane")),
        ]
    };
    let identity = [("AzureClusterIdentity", "cluster-identity".to_owned())];
    let owned = |objects: Vec<(&str, String)>| -> Vec<(String, String)> {
        objects
            .into_iter()
            .map(|(kind, name)| (kind.to_owned(), name))
            .collect()
    };
    let applied =
        a_flavor_is_generated_and_applied(client, clusterctl, namespace, Some("machinepool"), "pooled")
            .await?;
    assert_eq!(
        applied,
        owned([cluster("pooled").as_slice(), &pool("pooled", "mp-0"), &identity].concat())
    );
    let applied = a_flavor_is_generated_and_applied(
        client,
        clusterctl,
        namespace,
        Some("machinepool-windows"),
        "mixed",
    )
    .await?;
    assert_eq!(
        applied,
        owned(
            [
                cluster("mixed").as_slice(),
                &pool("mixed", "mp-0"),
                &identity,
                &pool("mixed", "mp-win"),
            ]
            .concat()
        )
    );

    the_pools_hold_what_capz_rs_reads(client, namespace).await?;

    // The network flavors: the default flavor's objects, its AzureCluster's network set apart.
    let deployment = |name: &str| {
        [
            ("MachineDeployment", format!("{name}-md-0")),
            ("AzureMachineTemplate", format!("{name}-md-0")),
            ("KubeadmConfigTemplate", format!("{name}-md-0")),
        ]
    };
    for (flavor, name) in [
        ("azure-bastion", "bastioned"),
        ("private", "private"),
        ("apiserver-ilb", "ilb"),
    ] {
        let applied =
            a_flavor_is_generated_and_applied(client, clusterctl, namespace, Some(flavor), name).await?;
        assert_eq!(
            applied,
            owned([cluster(name).as_slice(), &deployment(name), &identity].concat()),
            "{flavor}"
        );
    }
    the_networks_are_stored_as_written(client, namespace).await
}

/// What the network flavors set on their AzureClusters, kept by the CRD's schema as written.
async fn the_networks_are_stored_as_written(client: &kube::Client, namespace: &str) -> Outcome {
    let clusters = capz_harness::resource(
        client,
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "AzureCluster",
    )
    .await?;
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &clusters);
    // An empty azureBastion, which the CRD's schema fills with its defaults.
    let bastioned = clusters.get("bastioned").await?;
    assert_eq!(
        bastioned.data["spec"]["bastionSpec"]["azureBastion"]["sku"],
        "Basic"
    );

    let private = clusters.get("private").await?;
    let network = &private.data["spec"]["networkSpec"];
    assert_eq!(network["apiServerLB"]["type"], "Internal");
    assert_eq!(
        network["apiServerLB"]["frontendIPs"][0]["privateIP"],
        "10.0.0.100"
    );
    assert_eq!(network["controlPlaneOutboundLB"]["frontendIPsCount"], 1);
    assert_eq!(network["nodeOutboundLB"]["frontendIPsCount"], 1);
    assert_eq!(network["vnet"]["cidrBlocks"][0], "10.0.0.0/8");
    assert_eq!(
        private.data["spec"]["bastionSpec"]["azureBastion"]["subnet"]["cidrBlocks"][0],
        "10.255.255.224/27"
    );

    let ilb = clusters.get("ilb").await?;
    let frontends = &ilb.data["spec"]["networkSpec"]["apiServerLB"]["frontendIPs"];
    assert_eq!(
        frontends[0]["publicIP"]["dnsName"],
        "ilb-dns0001.westeurope.cloudapp.azure.com"
    );
    assert_eq!(frontends[1]["privateIP"], "30.0.0.100");
    let templates = capz_harness::resource(
        client,
        "bootstrap.cluster.x-k8s.io",
        "v1beta1",
        "KubeadmConfigTemplate",
    )
    .await?;
    let templates: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &templates);
    let workers = templates.get("ilb-md-0").await?;
    assert_eq!(
        workers.data["spec"]["template"]["spec"]["preKubeadmCommands"][0],
        "echo '30.0.0.100   ilb-dns0001.westeurope.cloudapp.azure.com' >> /etc/hosts"
    );
    Ok(())
}

/// What capz-rs reads of the flavors' pools: the scale sets' OS, rollout strategy and the Windows
/// pool's runtime, and the `azure.json` Secret each KubeadmConfig waits for.
async fn the_pools_hold_what_capz_rs_reads(client: &kube::Client, namespace: &str) -> Outcome {
    let pools = capz_harness::resource(
        client,
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "AzureMachinePool",
    )
    .await?;
    let pools: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &pools);
    let linux = pools.get("mixed-mp-0").await?;
    assert_eq!(linux.data["spec"]["template"]["osDisk"]["osType"], "Linux");
    assert_eq!(linux.data["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(
        linux.data["spec"]["strategy"]["rollingUpdate"]["deletePolicy"],
        "Oldest"
    );
    let windows = pools.get("mixed-mp-win").await?;
    assert_eq!(windows.data["spec"]["template"]["osDisk"]["osType"], "Windows");
    assert_eq!(
        windows.annotations().get("runtime").map(String::as_str),
        Some("containerd")
    );
    let configs =
        capz_harness::resource(client, "bootstrap.cluster.x-k8s.io", "v1beta1", "KubeadmConfig").await?;
    let configs: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &configs);
    for (config, secret, path) in [
        (
            "pooled-mp-0",
            "pooled-mp-0-azure-json",
            "/etc/kubernetes/azure.json",
        ),
        (
            "mixed-mp-0",
            "mixed-mp-0-azure-json",
            "/etc/kubernetes/azure.json",
        ),
        ("mixed-mp-win", "mixed-mp-win-azure-json", "c:/k/azure.json"),
    ] {
        let file = &configs.get(config).await?.data["spec"]["files"][0];
        assert_eq!(file["contentFrom"]["secret"]["name"], secret, "{config}");
        assert_eq!(
            file["contentFrom"]["secret"]["key"], "worker-node-azure.json",
            "{config}"
        );
        assert_eq!(file["path"], path, "{config}");
    }
    Ok(())
}

/// `clusterctl generate cluster NAME` of `flavor` (the default one when `None`), applied into
/// `namespace`; returns the kind and name of every object, in the flavor's order.
async fn a_flavor_is_generated_and_applied(
    client: &kube::Client,
    clusterctl: &Clusterctl,
    namespace: &str,
    flavor: Option<&str>,
    name: &str,
) -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let provider = format!(
        "{}:{}",
        capz_harness::clusterctl::PROVIDER,
        capz_harness::clusterctl::provider_version()
    );
    let variables = [
        ("AZURE_LOCATION", "westeurope"),
        ("AZURE_SUBSCRIPTION_ID", "00000000-0000-0000-0000-000000000001"),
        ("AZURE_TENANT_ID", "00000000-0000-0000-0000-0000000000aa"),
        ("AZURE_CLIENT_ID", "00000000-0000-0000-0000-0000000000bb"),
        ("AZURE_CONTROL_PLANE_MACHINE_TYPE", "Standard_D2s_v3"),
        ("AZURE_NODE_MACHINE_TYPE", "Standard_D2s_v3"),
        ("CLUSTER_IDENTITY_NAME", "cluster-identity"),
        ("AZURE_CLUSTER_IDENTITY_SECRET_NAME", "cluster-identity-secret"),
        ("AZURE_CLUSTER_IDENTITY_SECRET_NAMESPACE", namespace),
        // The apiserver-ilb flavor's public DNS label is `<cluster>-<suffix>`.
        ("APISERVER_LB_DNS_SUFFIX", "dns0001"),
        // Only the Windows pool's user reads it; the other flavors leave it unused.
        (
            "AZURE_SSH_PUBLIC_KEY",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f test",
        ),
    ];
    let mut args = vec![
        "generate",
        "cluster",
        name,
        "--infrastructure",
        &provider,
        "--kubernetes-version",
        "v1.33.0",
        "--target-namespace",
        namespace,
    ];
    if let Some(flavor) = flavor {
        args.extend(["--flavor", flavor]);
    }
    let generated = clusterctl.run_with_env(&args, &variables).await?.stdout;
    assert!(
        generated.contains(&format!("name: {name}-control-plane-azure-json")),
        "{generated}"
    );
    let applied = capz_harness::apply_yaml(client, namespace, &generated).await?;
    Ok(applied
        .iter()
        .map(|object| {
            let kind = object
                .types
                .as_ref()
                .map(|types| types.kind.clone())
                .unwrap_or_default();
            (kind, object.name_any())
        })
        .collect())
}

async fn the_inventory_lists_the_providers(client: &kube::Client, clusterctl: &Clusterctl) -> Outcome {
    let providers =
        capz_harness::resource(client, "clusterctl.cluster.x-k8s.io", "v1alpha3", "Provider").await?;
    let mut listed: Vec<(String, String, String, String)> =
        Api::<DynamicObject>::all_with(client.clone(), &providers)
            .list(&kube::api::ListParams::default())
            .await?
            .into_iter()
            .map(|provider| {
                let field = |name: &str| provider.data[name].as_str().unwrap_or_default().to_owned();
                (
                    provider.namespace().unwrap_or_default(),
                    field("providerName"),
                    field("type"),
                    field("version"),
                )
            })
            .collect();
    listed.sort();
    let version = capz_harness::cluster_api::version().to_owned();
    let expected = [
        ("capi-kubeadm-bootstrap-system", "kubeadm", "BootstrapProvider"),
        (
            "capi-kubeadm-control-plane-system",
            "kubeadm",
            "ControlPlaneProvider",
        ),
        ("capi-system", "cluster-api", "CoreProvider"),
    ]
    .map(|(namespace, name, kind)| {
        (
            namespace.to_owned(),
            name.to_owned(),
            kind.to_owned(),
            version.clone(),
        )
    });
    assert_eq!(listed, expected);

    // The local repository holds no newer release, and clusterctl sees that from the inventory.
    let plan = clusterctl.run(&["upgrade", "plan"]).await?.stdout;
    assert_eq!(plan.matches("Already up to date").count(), 3, "{plan}");
    Ok(())
}

async fn clusterctl_reads_the_cluster(clusterctl: &Clusterctl, namespace: &str) -> Outcome {
    let described = clusterctl
        .run(&["describe", "cluster", "smoke", "--namespace", namespace])
        .await?
        .stdout;
    assert!(
        described.contains(&format!("AzureCluster {namespace}/smoke")),
        "{described}"
    );

    let template = std::env::temp_dir().join(format!("capz-template-{}.yaml", std::process::id()));
    std::fs::write(&template, TEMPLATE)?;
    let generated = clusterctl
        .run(&[
            "generate",
            "cluster",
            "generated",
            "--target-namespace",
            namespace,
            "--from",
            template.to_str().ok_or("the temporary directory is not UTF-8")?,
        ])
        .await;
    std::fs::remove_file(&template)?;
    let generated = generated?.stdout;
    assert!(generated.contains("name: generated"), "{generated}");
    assert!(
        generated.contains(&format!("namespace: {namespace}")),
        "{generated}"
    );
    assert!(generated.contains("location: westeurope"), "{generated}");

    // A real move needs a provisioned cluster with an initialized control plane, which a
    // kubeadm cluster never reaches without machines; the dry run walks the same object graph.
    let moved = clusterctl
        .run(&["move", "--dry-run", "--namespace", namespace])
        .await?
        .stderr;
    assert!(moved.contains("Clusters=1"), "{moved}");
    Ok(())
}
