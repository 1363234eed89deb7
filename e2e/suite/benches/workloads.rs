//! What simulating workload clusters costs: `--clusters` clusters (100) of `--nodes` machines
//! each (10: one control plane, the rest workers), made through the emulator the way Cluster API
//! and capz-rs would leave them, without either: per cluster a public IP whose DNS name is the
//! control plane endpoint, its CAs, one VM whose custom data initializes the cluster and, once
//! its API server answers, the bootstrap token the workers join with (written into it, as the
//! kubeadm bootstrap provider does) and the workers' VMs. Reports how long until every machine's
//! Node registered and the peak RSS of the emulator (this process) and of the simulator.
//!
//! `just bench-workloads --clusters 100 --nodes 10`

use std::io::BufRead as _;
use std::time::{Duration, Instant};

use arm_emulator::Config;
use base64::Engine as _;
use capz_e2e::{TestResult, arm_request, process_memory};
use capz_harness::Authority;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const GROUP: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/workloads";
const LOCATION: &str = "westeurope";
const TOKEN_ID: &str = "abcdef";
const TOKEN_SECRET: &str = "0123456789abcdef";

struct Options {
    clusters: usize,
    nodes: usize,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        clusters: 100,
        nodes: 10,
    };
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    while let Some(arg) = args.next() {
        let value: usize = args
            .next()
            .ok_or(format!("{arg} needs a value"))?
            .parse()
            .map_err(|err| format!("{arg}: {err}"))?;
        match arg.as_str() {
            "--clusters" => options.clusters = value,
            "--nodes" => options.nodes = value.max(1),
            other => return Err(format!("unexpected argument {other}; use --clusters N --nodes N")),
        }
    }
    Ok(options)
}

/// One cluster: its endpoint and authorities.
struct Cluster {
    name: String,
    endpoint: String,
    ca: Authority,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> TestResult {
    let options = options()?;
    let (azure, ca_file, scratch) = start_emulator().await?;
    let mut simulator = std::process::Command::new(capz_harness::workload::simulator_binary()?)
        .args([
            format!("--emulator={}", azure.base_url()),
            format!("--emulator-ca={}", ca_file.display()),
            "--listen=127.0.0.1:0".to_owned(),
            "--interval=250ms".to_owned(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(scratch.join("simulator.log"))?)
        .spawn()?;
    let mut status_url = String::new();
    std::io::BufReader::new(simulator.stdout.take().ok_or("no standard output")?)
        .read_line(&mut status_url)?;
    let status_address: std::net::SocketAddr = status_url.trim().trim_start_matches("http://").parse()?;
    let started = Instant::now();
    create_clusters(&azure.emulator, &options, started).await?;
    let machines = options.clusters * options.nodes;
    wait_joined(status_address, machines, started).await?;
    let took = started.elapsed();
    let simulator_peak = process_memory(simulator.id()).peak;
    let emulator_peak = process_memory(std::process::id()).peak;
    let _ = simulator.kill();
    let _ = simulator.wait();
    println!(
        "{} clusters x {} nodes ({machines} machines): every node registered {:.1} s after the first create",
        options.clusters,
        options.nodes,
        took.as_secs_f64()
    );
    let total = simulator_peak + emulator_peak;
    println!(
        "peak RSS: simulator {simulator_peak:.0} MiB, emulator (this process) {emulator_peak:.0} MiB, total {total:.0} MiB ({:.2} MiB per cluster)",
        total / f64::from(u32::try_from(options.clusters)?.max(1))
    );
    let _ = std::fs::remove_dir_all(scratch);
    Ok(())
}

/// The emulator, answering at once and never throttling (what is measured is the simulation, not
/// Azure's limits on 2,000 writes), with its CA in a file; and a scratch directory.
async fn start_emulator() -> TestResult<(arm_emulator::Running, std::path::PathBuf, std::path::PathBuf)> {
    let tls = arm_emulator::tls::Tls::generate(&[])?;
    let azure = arm_emulator::start_tls(
        ([127, 0, 0, 1], 0).into(),
        Config {
            operation_latency: Duration::ZERO,
            retry_after_seconds: 0,
            request_log_size: 100,
            rate_limits: arm_emulator::throttle::RateLimits::unlimited(),
            ..Config::default()
        },
        &tls,
    )
    .await?;
    let scratch = capz_e2e::scratch("workloads")?;
    let ca_file = scratch.join("emulator-ca.pem");
    std::fs::write(&ca_file, &tls.ca_pem)?;
    Ok((azure, ca_file, scratch))
}

/// The clusters' control-plane VMs, then (once each API server answers) the workers' bootstrap
/// token and VMs.
async fn create_clusters(
    emulator: &arm_emulator::Emulator,
    options: &Options,
    started: Instant,
) -> TestResult {
    let put = async |path: String, body: Value| -> TestResult {
        let (status, answer) = arm_request(emulator, "PUT", &path, Some(body)).await?;
        if status >= 300 {
            return Err(format!("PUT {path}: {status} {answer}").into());
        }
        Ok(())
    };
    put(
        format!("{GROUP}?api-version=2021-04-01"),
        json!({"location": LOCATION}),
    )
    .await?;
    put(
        format!("{GROUP}/providers/Microsoft.Network/virtualNetworks/vnet?api-version=2024-05-01"),
        json!({"location": LOCATION, "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/8"]},
            "subnets": [{"name": "nodes", "properties": {"addressPrefix": "10.0.0.0/12"}}],
        }}),
    )
    .await?;
    let mut clusters = Vec::new();
    for index in 0..options.clusters {
        let name = format!("wl{index}");
        put(
            format!("{GROUP}/providers/Microsoft.Network/publicIPAddresses/{name}?api-version=2024-05-01"),
            json!({"location": LOCATION, "sku": {"name": "Standard"}, "properties": {
                "publicIPAllocationMethod": "Static",
                "dnsSettings": {"domainNameLabel": format!("{name}-api")},
            }}),
        )
        .await?;
        let cluster = Cluster {
            endpoint: format!("{name}-api.{LOCATION}.cloudapp.azure.com:6443"),
            name,
            ca: Authority::new("kubernetes")?,
        };
        machine(&put, &cluster, "control-plane", &init_data(&cluster)?).await?;
        clusters.push(cluster);
    }
    // The workers' tokens go in once each API server answers.
    for cluster in &clusters {
        write_token(emulator, cluster, started).await?;
    }
    for cluster in &clusters {
        for worker in 1..options.nodes {
            machine(&put, cluster, &format!("worker-{worker}"), &join_data(cluster)).await?;
        }
    }
    Ok(())
}

/// Waits until the simulator has every one of `machines` joined.
async fn wait_joined(status_address: std::net::SocketAddr, machines: usize, started: Instant) -> TestResult {
    loop {
        let (_, body) = capz_harness::http_get(status_address, "/status").await?;
        let status: Value = serde_json::from_str(&body)?;
        let joined = status["clusters"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|cluster| cluster["machines"].as_array().into_iter().flatten())
            .filter(|machine| machine["joined"] == true)
            .count();
        if joined == machines {
            return Ok(());
        }
        if started.elapsed() > Duration::from_mins(10) {
            return Err(format!("{joined} of {machines} machines joined in 10 minutes").into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A NIC and a VM `<cluster>-<role>` with `custom_data` (cloud-config text).
async fn machine(
    put: &impl AsyncFn(String, Value) -> TestResult,
    cluster: &Cluster,
    role: &str,
    custom_data: &str,
) -> TestResult {
    let name = format!("{}-{role}", cluster.name);
    let nic = format!("{GROUP}/providers/Microsoft.Network/networkInterfaces/{name}-nic");
    put(
        format!("{nic}?api-version=2024-05-01"),
        json!({"location": LOCATION, "properties": {"ipConfigurations": [{"name": "ipconfig1", "properties": {
            "subnet": {"id": format!("{GROUP}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes")},
        }}]}}),
    )
    .await?;
    put(
        format!("{GROUP}/providers/Microsoft.Compute/virtualMachines/{name}?api-version=2024-07-01"),
        json!({"location": LOCATION, "properties": {
            "hardwareProfile": {"vmSize": "Standard_D2s_v3"},
            "storageProfile": {
                "imageReference": {"communityGalleryImageId": format!(
                    "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-ubun2-2404/Versions/{}",
                    capz_e2e::KUBERNETES_VERSION.trim_start_matches('v'))},
                "osDisk": {"osType": "Linux", "createOption": "FromImage", "diskSizeGB": 128,
                    "managedDisk": {"storageAccountType": "Premium_LRS"}},
            },
            "osProfile": {
                "computerName": name,
                "adminUsername": "capi",
                "customData": base64::engine::general_purpose::STANDARD.encode(custom_data),
                "linuxConfiguration": {"disablePasswordAuthentication": true, "ssh": {"publicKeys": [{
                    "path": "/home/capi/.ssh/authorized_keys",
                    "keyData": String::from_utf8(base64::engine::general_purpose::STANDARD.decode(capz_e2e::SSH_PUBLIC_KEY_B64)?)?,
                }]}},
            },
            "networkProfile": {"networkInterfaces": [{"id": nic, "properties": {"primary": true}}]},
        }}),
    )
    .await
}

/// `path` with `content` as cloud-init's `write_files` takes it.
fn file(path: &str, content: &str) -> Value {
    json!({"path": path, "owner": "root:root", "permissions": "0640", "content": content})
}

/// The first control-plane machine's cloud-config, laid out as the kubeadm bootstrap provider
/// writes it.
fn init_data(cluster: &Cluster) -> TestResult<String> {
    let etcd = Authority::new("etcd-ca")?;
    let kubeadm = format!(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: {}\ncontrolPlaneEndpoint: {}\nkubernetesVersion: {}\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  name: '{{{{ ds.meta_data[\"local_hostname\"] }}}}'\n  kubeletExtraArgs:\n  - name: cloud-provider\n    value: external\n",
        cluster.name,
        cluster.endpoint,
        capz_e2e::KUBERNETES_VERSION
    );
    let config = json!({
        "write_files": [
            file("/etc/kubernetes/pki/ca.crt", cluster.ca.cert_pem()),
            file("/etc/kubernetes/pki/ca.key", &cluster.ca.key_pem()),
            file("/etc/kubernetes/pki/etcd/ca.crt", etcd.cert_pem()),
            file("/etc/kubernetes/pki/etcd/ca.key", &etcd.key_pem()),
            file("/run/kubeadm/kubeadm.yaml", &kubeadm),
        ],
        "runcmd": ["kubeadm init --config /run/kubeadm/kubeadm.yaml"],
    });
    Ok(format!("## template: jinja\n#cloud-config\n{config}\n"))
}

/// A worker's cloud-config.
fn join_data(cluster: &Cluster) -> String {
    let kubeadm = format!(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: {}\n    token: {TOKEN_ID}.{TOKEN_SECRET}\n    unsafeSkipCAVerification: true\nnodeRegistration:\n  name: '{{{{ ds.meta_data[\"local_hostname\"] }}}}'\n  kubeletExtraArgs:\n  - name: cloud-provider\n    value: external\n",
        cluster.endpoint
    );
    let config = json!({
        "write_files": [file("/run/kubeadm/kubeadm-join-config.yaml", &kubeadm)],
        "runcmd": ["kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml"],
    });
    format!("## template: jinja\n#cloud-config\n{config}\n")
}

/// Writes the workers' bootstrap token into the cluster once its API server answers.
async fn write_token(emulator: &arm_emulator::Emulator, cluster: &Cluster, started: Instant) -> TestResult {
    let (host, port) = cluster.endpoint.rsplit_once(':').ok_or("no port")?;
    let port: u16 = port.parse()?;
    let target = loop {
        if let Some(route) = emulator
            .routes()
            .into_iter()
            .find(|route| route.host.eq_ignore_ascii_case(host) && route.port == port)
        {
            break route.target;
        }
        if started.elapsed() > Duration::from_mins(10) {
            return Err(format!("{} never answered", cluster.endpoint).into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut config = kube::Config::new(format!("https://{target}").parse()?);
    config.root_cert = Some(vec![pem_der(cluster.ca.cert_pem())?]);
    config.tls_server_name = Some(host.to_owned());
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("bootstrap-token-{TOKEN_ID}"), "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": {
            "token-id": TOKEN_ID,
            "token-secret": TOKEN_SECRET,
            "usage-bootstrap-authentication": "true",
            "usage-bootstrap-signing": "true",
        },
    }))?;
    Api::<Secret>::namespaced(kube::Client::try_from(config)?, "kube-system")
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

fn pem_der(pem: &str) -> TestResult<Vec<u8>> {
    let body: String = pem.lines().filter(|line| !line.starts_with("-----")).collect();
    Ok(base64::engine::general_purpose::STANDARD.decode(body)?)
}
