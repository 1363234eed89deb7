//! How fast the emulator answers and how much memory its state takes, measured over real HTTP on
//! loopback: the emulator serves in this process with [`arm_emulator::start`] (or
//! [`arm_emulator::start_tls`] with `--tls`), and hyper clients drive it over several connections.
//! Not a test: it prints figures and fails only when an answer is not the expected one.
//!
//! Run it with `just bench-emulator` (release build). Options: `--seconds N` per timed phase
//! (default 10), `--connections N` (default 8), `--per-type N` resources of each kind in the
//! stored mix (default 2,500), `--tls` to serve and call HTTPS instead of plain HTTP.
//!
//! What it does, in order:
//! 1. fills the request log with reads, so that the memory figure counts stored resources, not
//!    log entries;
//! 2. stores the mix through the ARM API, each PUT followed by polls of its `Azure-AsyncOperation`
//!    URL until `Succeeded`: `per-type` subnets (in virtual networks of 100 subnets), as many
//!    network interfaces (250 to a subnet, as machines share a cluster's node subnet) and as many
//!    virtual machines (one per interface), each machine creating its managed OS disk. Stored
//!    resources = subnets + interfaces + machines + OS disks; the few virtual networks and the
//!    resource group come on top;
//! 3. reports the heap (allocator-level: bytes allocated minus bytes freed by every thread of the
//!    process) and the resident set size (VmRSS) the mix added, per stored resource. Both include
//!    what the state keeps besides the documents: the reverse index of references and the record
//!    of every finished operation;
//! 4. lists the OS disks page by page (the time a client takes to read a long list), then reads
//!    the stored resources round-robin for a fixed time (GET/s, every answer 200);
//! 5. creates new network interfaces (all in one /16 subnet, which grows as they come), then new
//!    managed disks, then new virtual machines (on the interfaces of the previous step), each for
//!    a fixed time, and counts resources whose operation reached `Succeeded` per second.

use std::alloc::System;
use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arm_emulator::config::DEFAULT_CLIENT_ID;
use arm_emulator::throttle::RateLimits;
use arm_emulator::{Config, Running};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

// Counting every allocation costs a few atomic additions each, in every phase alike; it gives the
// live heap size, which the resident set size only approximates.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

type Fallible<T> = Result<T, Box<dyn Error + Send + Sync>>;

const GROUP: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/bench";
const NETWORK: &str = "api-version=2024-05-01";
const COMPUTE: &str = "api-version=2024-07-01";
const DISKS: &str = "api-version=2024-03-02";
const SUBNETS_PER_NETWORK: usize = 100;
/// Interfaces of the stored mix per subnet (a /24 has 251 free addresses).
const NICS_PER_SUBNET: usize = 250;
/// The network holding the subnet of the timed interface creations; the others are numbered
/// from 0.
const NODES_NETWORK: usize = 250;

struct Options {
    seconds: u64,
    connections: usize,
    per_type: usize,
    tls: bool,
}

fn options() -> Fallible<Options> {
    let mut options = Options {
        seconds: 10,
        connections: 8,
        per_type: 2_500,
        tls: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |flag: &str| -> Fallible<usize> {
            let raw = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            Ok(raw.parse().map_err(|err| format!("{flag} {raw}: {err}"))?)
        };
        match arg.as_str() {
            "--seconds" => options.seconds = u64::try_from(number("--seconds")?)?,
            "--connections" => options.connections = number("--connections")?.max(1),
            "--per-type" => options.per_type = number("--per-type")?.max(1),
            "--tls" => options.tls = true,
            // `cargo bench` passes this to every bench target.
            "--bench" => {}
            other => return Err(format!("unexpected argument {other}").into()),
        }
    }
    if options.per_type.div_ceil(SUBNETS_PER_NETWORK) > NODES_NETWORK {
        return Err("--per-type: at most 25,000 subnets fit the address plan".into());
    }
    Ok(options)
}

fn main() -> Fallible<()> {
    let options = options()?;
    // The binary serves on Tokio's default runtime, one worker per core; so does the benchmark,
    // its clients included.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run(&options))
}

async fn run(options: &Options) -> Fallible<()> {
    let (_running, mut connections) = start(options).await?;
    println!(
        "arm-emulator benchmark: {} over loopback, {} connections, {} Tokio workers for server and clients, zero operation latency, no rate limits",
        if options.tls { "HTTPS" } else { "plain HTTP" },
        options.connections,
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
    );
    populate(&mut connections, options.per_type).await?;
    let duration = Duration::from_secs(options.seconds);
    read(&mut connections, options.per_type, duration).await?;
    write(&mut connections, options.per_type, duration).await?;
    scale_out(&mut connections).await?;
    aks_create(&mut connections).await
}

/// AKS clusters created from nothing, one per connection at a time: how fast a cluster's PUT
/// reaches Succeeded with its node resource group and the scale set of its system pool.
async fn aks_create(connections: &mut Vec<Connection>) -> Fallible<()> {
    let clusters = connections.len() * 2;
    let heap_before = heap_bytes();
    let started = Instant::now();
    for_each(connections, clusters, |mut connection, index| async move {
        connection
            .put_to_succeeded(
                &format!("{GROUP}/providers/Microsoft.ContainerService/managedClusters/aks{index}?api-version=2025-08-01"),
                &json!({
                    "location": "westus2",
                    "identity": {"type": "SystemAssigned"},
                    "properties": {
                        "kubernetesVersion": "1.33",
                        "dnsPrefix": format!("aks{index}"),
                        "agentPoolProfiles": [{"name": "system", "mode": "System", "count": AKS_NODES, "vmSize": "Standard_D2s_v3"}],
                    },
                }),
            )
            .await?;
        Ok(connection)
    })
    .await?;
    let elapsed = started.elapsed();
    // A cluster stores itself, its pool, its node resource group with the kubelet identity, the
    // network, the outbound address and the pool's scale set, and each node with its OS disk.
    let stored = i128::try_from(clusters * (7 + 2 * AKS_NODES))?;
    println!(
        "aks: {clusters} managed clusters of {AKS_NODES} nodes, PUT-to-Succeeded in {:.2} s = {:.0} clusters/s; heap {} bytes per stored resource",
        elapsed.as_secs_f64(),
        per_second(clusters, elapsed),
        (heap_bytes() - heap_before) / stored,
    );
    Ok(())
}

/// Nodes of each cluster's system pool in the AKS phase.
const AKS_NODES: usize = 3;

/// Scale sets grown from none to `SCALE_SET_CAPACITY` instances, one set per connection at a
/// time: how fast instances come (the set's PUT to Succeeded), and what each one stores.
async fn scale_out(connections: &mut Vec<Connection>) -> Fallible<()> {
    let sets = connections.len() * 2;
    let heap_before = heap_bytes();
    let started = Instant::now();
    for_each(connections, sets, |mut connection, index| async move {
        connection
            .put_to_succeeded(
                &format!("{GROUP}/providers/Microsoft.Compute/virtualMachineScaleSets/pool{index}?{COMPUTE}"),
                &scale_set_body(SCALE_SET_CAPACITY),
            )
            .await?;
        Ok(connection)
    })
    .await?;
    let elapsed = started.elapsed();
    let instances = sets * SCALE_SET_CAPACITY;
    // Every instance stores itself and its OS disk.
    let stored = i128::try_from(instances * 2)?;
    println!(
        "scale-out: {sets} scale sets of {SCALE_SET_CAPACITY} instances each, PUT-to-Succeeded in {:.2} s = {:.0} instances/s; heap {} bytes per stored resource (instances and their OS disks)",
        elapsed.as_secs_f64(),
        per_second(instances, elapsed),
        (heap_bytes() - heap_before) / stored,
    );
    Ok(())
}

/// Instances per scale set in the scale-out phase.
const SCALE_SET_CAPACITY: usize = 100;

fn scale_set_body(capacity: usize) -> Value {
    json!({
        "location": "westus2",
        "sku": {"name": "Standard_D2s_v3", "capacity": capacity},
        "zones": ["1", "2", "3"],
        "properties": {
            "orchestrationMode": "Uniform",
            "upgradePolicy": {"mode": "Manual"},
            "virtualMachineProfile": {
                "osProfile": {"computerNamePrefix": "pool", "adminUsername": "capi", "linuxConfiguration": {
                    "disablePasswordAuthentication": true,
                    "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-ed25519 AAAA"}]}
                }},
                "storageProfile": {"imageReference": {"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest"}},
                "networkProfile": {"networkInterfaceConfigurations": [{"name": "nic", "properties": {"primary": true, "ipConfigurations": [
                    {"name": "ipconfig", "properties": {"subnet": {"id": format!("{}/subnets/nodes", network_path(NODES_NETWORK))}}}
                ]}}]}
            }
        }
    })
}

/// Starts the emulator without request limits and opens the connections.
async fn start(options: &Options) -> Fallible<(Running, Vec<Connection>)> {
    let config = Config {
        rate_limits: RateLimits::unlimited(),
        ..Config::default()
    };
    let (running, connector) = if options.tls {
        let tls = arm_emulator::tls::Tls::generate(&[])?;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(tls.ca_der().ok_or("no CA certificate")?)?;
        let client =
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_root_certificates(roots)
                .with_no_client_auth();
        let running = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), config, &tls).await?;
        (running, Some(tokio_rustls::TlsConnector::from(Arc::new(client))))
    } else {
        let running = arm_emulator::start(([127, 0, 0, 1], 0).into(), config).await?;
        (running, None)
    };
    let token: Arc<str> = running
        .emulator
        .access_token(DEFAULT_CLIENT_ID)
        .ok_or("no token for the default principal")?
        .into();
    let mut connections = Vec::new();
    for _ in 0..options.connections {
        connections.push(Connection::open(running.address, connector.as_ref(), token.clone()).await?);
    }
    Ok((running, connections))
}

/// Stores the mix and reports how fast it went in and the memory it takes.
async fn populate(connections: &mut Vec<Connection>, per_type: usize) -> Fallible<()> {
    let group = format!("{GROUP}?api-version=2021-04-01");
    connections[0]
        .put_to_succeeded(&group, &json!({"location": "westus2"}))
        .await?;
    // The request log keeps the last 1,000 requests: fill it before measuring.
    for_each(connections, 2_000, move |mut connection, _| {
        let group = group.clone();
        async move {
            connection.get_ok(&group).await?;
            Ok(connection)
        }
    })
    .await?;
    let (heap_before, resident_before) = (heap_bytes(), resident_bytes());

    let networks = per_type.div_ceil(SUBNETS_PER_NETWORK);
    for network in 0..networks {
        let prefix = format!("10.{network}.0.0/16");
        connections[0]
            .put_to_succeeded(
                &format!("{}?{NETWORK}", network_path(network)),
                &json!({"location": "westus2", "properties": {"addressSpace": {"addressPrefixes": [prefix]}}}),
            )
            .await?;
    }
    let subnets = for_each(connections, per_type, |mut connection, index| async move {
        let prefix = format!(
            "10.{}.{}.0/24",
            index / SUBNETS_PER_NETWORK,
            index % SUBNETS_PER_NETWORK
        );
        connection
            .put_to_succeeded(
                &format!("{}?{NETWORK}", subnet_path(index)),
                &json!({"properties": {"addressPrefix": prefix}}),
            )
            .await?;
        Ok(connection)
    })
    .await?;
    let nics = for_each(connections, per_type, |mut connection, index| async move {
        connection
            .put_to_succeeded(
                &format!("{}?{NETWORK}", nic_path(&format!("nic{index}"))),
                &nic_body(&subnet_path(index / NICS_PER_SUBNET)),
            )
            .await?;
        Ok(connection)
    })
    .await?;
    let vms = for_each(connections, per_type, |mut connection, index| async move {
        connection
            .put_to_succeeded(
                &format!("{}?{COMPUTE}", vm_path(&format!("vm{index}"))),
                &vm_body(&format!("nic{index}")),
            )
            .await?;
        Ok(connection)
    })
    .await?;
    let (heap_after, resident_after) = (heap_bytes(), resident_bytes());

    println!(
        "populate (PUT-to-Succeeded, growing state): {per_type} subnets {:.0}/s, {per_type} NICs {:.0}/s, {per_type} VMs (each with its OS disk) {:.0}/s",
        per_second(per_type, subnets),
        per_second(per_type, nics),
        per_second(per_type, vms),
    );
    let stored = per_type * 4;
    let count = i128::try_from(stored)?;
    let heap = heap_after - heap_before;
    println!(
        "memory, heap: {:.1} MiB for {stored} stored resources ({per_type} each of subnets, NICs, VMs, VM OS disks; plus {networks} vnets) = {} bytes per resource",
        mib(heap),
        heap / count,
    );
    if let (Some(before), Some(after)) = (resident_before, resident_after) {
        println!(
            "memory, resident (VmRSS): {:.1} MiB for the same = {} bytes per resource",
            mib(after - before),
            (after - before) / count,
        );
    }
    Ok(())
}

/// Reads every stored resource round-robin for `duration`.
async fn read(connections: &mut Vec<Connection>, per_type: usize, duration: Duration) -> Fallible<()> {
    let mut targets: Vec<String> = Vec::with_capacity(per_type * 4);
    for index in 0..per_type {
        targets.push(format!("{}?{NETWORK}", subnet_path(index)));
        targets.push(format!("{}?{NETWORK}", nic_path(&format!("nic{index}"))));
        targets.push(format!("{}?{COMPUTE}", vm_path(&format!("vm{index}"))));
    }
    // The OS disks have generated names: list them.
    let mut page = Some(format!("{GROUP}/providers/Microsoft.Compute/disks?{DISKS}"));
    let (mut pages, started) = (0, Instant::now());
    while let Some(path) = page.take() {
        let list = connections[0].get_ok(&path).await?.json();
        for disk in list["value"].as_array().into_iter().flatten() {
            let id = disk["id"].as_str().ok_or("a disk without id")?;
            targets.push(format!("{id}?{DISKS}"));
        }
        page = list["nextLink"].as_str().map(local);
        pages += 1;
    }
    println!(
        "LIST: {per_type} managed disks of the group in {pages} pages, {:.0} ms on one connection",
        started.elapsed().as_secs_f64() * 1000.0
    );
    if targets.len() != per_type * 4 {
        return Err(format!("{} resources to read, {} expected", targets.len(), per_type * 4).into());
    }
    let targets = Arc::new(targets);
    let (reads, elapsed) = for_duration(connections, duration, usize::MAX, move |mut connection, index| {
        let targets = targets.clone();
        async move {
            connection.get_ok(&targets[index % targets.len()]).await?;
            Ok(connection)
        }
    })
    .await?;
    println!(
        "GET: {:.0}/s sustained over {:.1} s on the populated state ({reads} reads of VMs, NICs, disks and subnets, all 200)",
        per_second(reads, elapsed),
        elapsed.as_secs_f64()
    );
    Ok(())
}

/// Creates interfaces, disks and machines, each kind for `duration`.
async fn write(connections: &mut Vec<Connection>, per_type: usize, duration: Duration) -> Fallible<()> {
    let nodes = format!("{}/subnets/nodes", network_path(NODES_NETWORK));
    connections[0]
        .put_to_succeeded(
            &format!("{}?{NETWORK}", network_path(NODES_NETWORK)),
            &json!({"location": "westus2", "properties": {
                "addressSpace": {"addressPrefixes": ["10.250.0.0/16"]},
                "subnets": [{"name": "nodes", "properties": {"addressPrefix": "10.250.0.0/16"}}]
            }}),
        )
        .await?;
    let body = nic_body(&nodes);
    let (nics, elapsed) = for_duration(connections, duration, usize::MAX, move |mut connection, index| {
        let body = body.clone();
        async move {
            connection
                .put_to_succeeded(
                    &format!("{}?{NETWORK}", nic_path(&format!("extra{index}"))),
                    &body,
                )
                .await?;
            Ok(connection)
        }
    })
    .await?;
    println!(
        "PUT-to-Succeeded, NICs: {:.0}/s sustained over {:.1} s ({nics} created, all in one /16 subnet)",
        per_second(nics, elapsed),
        elapsed.as_secs_f64()
    );
    let (disks, elapsed) = for_duration(connections, duration, usize::MAX, |mut connection, index| async move {
        connection
            .put_to_succeeded(
                &format!("{GROUP}/providers/Microsoft.Compute/disks/extra{index}?{DISKS}"),
                &json!({"location": "westus2", "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 64}}),
            )
            .await?;
        Ok(connection)
    })
    .await?;
    println!(
        "PUT-to-Succeeded, managed disks: {:.0}/s sustained over {:.1} s ({disks} created)",
        per_second(disks, elapsed),
        elapsed.as_secs_f64()
    );
    let (machines, elapsed) = for_duration(connections, duration, nics, |mut connection, index| async move {
        connection
            .put_to_succeeded(
                &format!("{}?{COMPUTE}", vm_path(&format!("extra{index}"))),
                &vm_body(&format!("extra{index}")),
            )
            .await?;
        Ok(connection)
    })
    .await?;
    println!(
        "PUT-to-Succeeded, VMs: {:.0}/s sustained over {:.1} s ({machines} created, each with its OS disk{}; {} VMs stored before)",
        per_second(machines, elapsed),
        elapsed.as_secs_f64(),
        if machines == nics {
            ", until the NICs ran out"
        } else {
            ""
        },
        per_type,
    );
    Ok(())
}

/// One HTTP/1.1 connection to the emulator.
struct Connection {
    sender: SendRequest<Body>,
    host: String,
    token: Arc<str>,
}

/// An answer: status, headers and body bytes.
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

impl Connection {
    async fn open(
        address: SocketAddr,
        tls: Option<&tokio_rustls::TlsConnector>,
        token: Arc<str>,
    ) -> Fallible<Self> {
        let tcp = tokio::net::TcpStream::connect(address).await?;
        tcp.set_nodelay(true)?;
        let sender = if let Some(connector) = tls {
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1")?;
            let stream = connector.connect(name, tcp).await?;
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(connection);
            sender
        } else {
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
            tokio::spawn(connection);
            sender
        };
        Ok(Self {
            sender,
            host: address.to_string(),
            token,
        })
    }

    async fn send(&mut self, method: Method, path: &str, body: Option<&Value>) -> Fallible<Reply> {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.host)
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .body(body.map_or_else(Body::empty, |body| Body::from(body.to_string())))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(Body::new(response.into_body()), usize::MAX).await?;
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    async fn get_ok(&mut self, path: &str) -> Fallible<Reply> {
        let reply = self.send(Method::GET, path, None).await?;
        if reply.status != StatusCode::OK {
            return Err(format!(
                "GET {path}: {} {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            )
            .into());
        }
        Ok(reply)
    }

    /// PUTs a resource and polls its operation until it succeeded.
    async fn put_to_succeeded(&mut self, path: &str, body: &Value) -> Fallible<()> {
        let reply = self.send(Method::PUT, path, Some(body)).await?;
        if !reply.status.is_success() {
            return Err(format!(
                "PUT {path}: {} {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            )
            .into());
        }
        let Some(status_url) = reply
            .headers
            .get("azure-asyncoperation")
            .and_then(|value| value.to_str().ok())
        else {
            // A synchronous write is done when answered.
            return Ok(());
        };
        let status_path = local(status_url);
        loop {
            // A substring test keeps the client's share of the CPU small; anything else is parsed
            // for the error message.
            let status = self.get_ok(&status_path).await?;
            let has = |needle: &[u8]| status.body.windows(needle.len()).any(|window| window == needle);
            if has(br#""status":"Succeeded""#) {
                return Ok(());
            }
            if !has(br#""status":"InProgress""#) {
                return Err(format!("PUT {path}: operation ended {}", status.json()).into());
            }
            tokio::task::yield_now().await;
        }
    }
}

/// The path and query of a URL the emulator handed out.
fn local(url: &str) -> String {
    url.find("/subscriptions/")
        .map_or_else(|| url.to_owned(), |start| url[start..].to_owned())
}

/// Runs `job(index)` for every index below `count` over all connections; returns the elapsed time.
async fn for_each<F, Fut>(connections: &mut Vec<Connection>, count: usize, job: F) -> Fallible<Duration>
where
    F: Fn(Connection, usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Fallible<Connection>> + Send,
{
    let (done, elapsed) = for_duration(connections, Duration::MAX, count, job).await?;
    if done < count {
        return Err(format!("{done} of {count} jobs done").into());
    }
    Ok(elapsed)
}

/// Runs `job(index)` with increasing indexes over all connections until `duration` has passed or
/// `limit` jobs were started; returns how many jobs completed and the elapsed time.
async fn for_duration<F, Fut>(
    connections: &mut Vec<Connection>,
    duration: Duration,
    limit: usize,
    job: F,
) -> Fallible<(usize, Duration)>
where
    F: Fn(Connection, usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Fallible<Connection>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let deadline = start.checked_add(duration);
    let mut workers = Vec::new();
    for mut connection in connections.drain(..) {
        let (next, done, job) = (next.clone(), done.clone(), job.clone());
        workers.push(tokio::spawn(async move {
            while deadline.is_none_or(|deadline| Instant::now() < deadline) {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= limit {
                    break;
                }
                connection = job(connection, index).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, Box<dyn Error + Send + Sync>>(connection)
        }));
    }
    for worker in workers {
        connections.push(worker.await??);
    }
    Ok((done.load(Ordering::Relaxed), start.elapsed()))
}

fn network_path(network: usize) -> String {
    format!("{GROUP}/providers/Microsoft.Network/virtualNetworks/vnet{network}")
}

fn subnet_path(index: usize) -> String {
    format!(
        "{}/subnets/s{}",
        network_path(index / SUBNETS_PER_NETWORK),
        index % SUBNETS_PER_NETWORK
    )
}

fn nic_path(name: &str) -> String {
    format!("{GROUP}/providers/Microsoft.Network/networkInterfaces/{name}")
}

fn vm_path(name: &str) -> String {
    format!("{GROUP}/providers/Microsoft.Compute/virtualMachines/{name}")
}

fn nic_body(subnet: &str) -> Value {
    json!({
        "location": "westus2",
        "properties": {
            "ipConfigurations": [{"name": "ipconfig1", "properties": {"subnet": {"id": subnet}}}]
        }
    })
}

/// A machine as CAPZ asks for one: marketplace image, SSH key, custom data, one interface.
fn vm_body(nic: &str) -> Value {
    json!({
        "location": "westus2",
        "properties": {
            "hardwareProfile": {"vmSize": "Standard_D2s_v3"},
            "storageProfile": {
                "imageReference": {"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest"},
                "osDisk": {"osType": "Linux", "createOption": "FromImage", "diskSizeGB": 128, "managedDisk": {"storageAccountType": "Premium_LRS"}}
            },
            "osProfile": {
                "computerName": "node",
                "adminUsername": "capi",
                "customData": "I2Nsb3VkLWNvbmZpZwo=",
                "linuxConfiguration": {
                    "disablePasswordAuthentication": true,
                    "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-ed25519 AAAA"}]}
                }
            },
            "networkProfile": {"networkInterfaces": [{"id": nic_path(nic), "properties": {"primary": true}}]}
        }
    })
}

/// Live heap bytes of the whole process.
fn heap_bytes() -> i128 {
    let stats = GLOBAL.stats();
    // Reallocations are already in both totals, by how much they grew or shrank.
    i128::try_from(stats.bytes_allocated).unwrap_or(i128::MAX)
        - i128::try_from(stats.bytes_deallocated).unwrap_or(0)
}

/// Resident set size in bytes, from `/proc/self/status`.
fn resident_bytes() -> Option<i128> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: i128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
fn per_second(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

#[expect(clippy::cast_precision_loss, reason = "byte sizes far below 2^52")]
fn mib(bytes: i128) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
