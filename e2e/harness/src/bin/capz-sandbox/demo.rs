//! `capz-sandbox demo`: a cluster of the default flavor in the running sandbox, made the way a
//! user makes one (`clusterctl generate cluster`, `kubectl apply`), with a cloud controller manager
//! and a CNI installed as CAPZ's quick start does (here by ClusterResourceSets, see
//! `capz_harness::capz::addons`),
//! then followed until the Cluster is Available: the AzureCluster Ready with its endpoint, the
//! control plane initialized on its VM, the workers joined, every Node Ready. It ends with the
//! workload cluster's nodes, read through the kubeconfig `clusterctl get kubeconfig` gives. Every
//! command is printed before it runs, so the output doubles as a walkthrough.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use capz_harness::capz::{ADDONS_LABEL, IDENTITY_SECRET, KUBERNETES_VERSION, addons, flavor_variables};
use capz_harness::clusterctl::PROVIDER;

use crate::State;

/// The namespace the demo cluster goes in.
const NAMESPACE: &str = "default";

/// kubectl and clusterctl set up for the sandbox.
struct Tools<'a> {
    state: &'a State,
}

impl Tools<'_> {
    fn command(&self, dir: &Path, program: &str) -> Command {
        let mut command = Command::new(dir.join(program));
        command
            .env("KUBECONFIG", &self.state.kubeconfig)
            .env("CLUSTERCTL_DISABLE_VERSIONCHECK", "true");
        command
    }

    fn kubectl(&self, args: &[&str]) -> Command {
        let mut command = self.command(&self.state.kube_bins, "kubectl");
        command.args(args);
        command
    }

    fn clusterctl(&self, args: &[&str]) -> Command {
        let mut command = self.command(&self.state.capi_bins, "clusterctl");
        command
            .args(args)
            .arg("--config")
            .arg(&self.state.clusterctl_config);
        command
    }
}

/// Runs `command`, its output going to ours, with `input` on its standard input when given;
/// `shown` is what is printed for it.
fn run(shown: &str, command: &mut Command, input: Option<&[u8]>) -> Result<(), String> {
    println!("\n$ {shown}");
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command
        .spawn()
        .map_err(|err| format!("cannot run {shown}: {err}"))?;
    if let Some(input) = input {
        child
            .stdin
            .take()
            .ok_or("no standard input")?
            .write_all(input)
            .map_err(|err| format!("cannot write to {shown}: {err}"))?;
    }
    let status = child.wait().map_err(|err| err.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// What `command` wrote to its standard output.
fn output(shown: &str, command: &mut Command) -> Result<Vec<u8>, String> {
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .map_err(|err| format!("cannot run {shown}: {err}"))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(format!("`{shown}` failed ({})", output.status))
    }
}

/// Creates cluster `name` of the default flavor and follows it until it converges.
pub(crate) fn demo(state: &State, dir: &Path, name: &str) -> Result<(), String> {
    let tools = Tools { state };
    let started = Instant::now();

    create_identity_secret(&tools)?;

    let variables = flavor_variables(name, NAMESPACE);
    let shown_variables: Vec<String> = variables
        .iter()
        .map(|(variable, value)| format!("{variable}={value}"))
        .collect();
    let generate = [
        "generate",
        "cluster",
        name,
        "--infrastructure",
        PROVIDER,
        "--kubernetes-version",
        KUBERNETES_VERSION,
        "--worker-machine-count",
        "2",
    ];
    let manifest = output(
        "clusterctl generate cluster",
        tools
            .clusterctl(&generate)
            .envs(variables.iter().map(|(variable, value)| (variable, value))),
    )?;
    let file: PathBuf = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, &manifest).map_err(|err| format!("cannot write {}: {err}", file.display()))?;
    println!(
        "\n$ {} clusterctl {} > {}",
        shown_variables.join(" "),
        generate.join(" "),
        file.display()
    );

    apply_with_add_ons(&tools, dir, name, &file)?;
    let cluster = format!("cluster/{name}");
    let azure_cluster = format!("azurecluster/{name}");
    run(
        &format!("kubectl wait {azure_cluster} --for=jsonpath='{{.status.ready}}'=true --timeout=3m"),
        &mut tools.kubectl(&[
            "wait",
            &azure_cluster,
            "--for=jsonpath={.status.ready}=true",
            "--timeout=3m",
        ]),
        None,
    )?;
    let control_plane = format!("cluster.x-k8s.io/cluster-name={name},cluster.x-k8s.io/control-plane");
    wait_exists(&tools, "azuremachine", &control_plane, Duration::from_mins(3))?;
    run(
        &format!("kubectl wait azuremachine -l {control_plane} --for=condition=Ready --timeout=3m"),
        &mut tools.kubectl(&[
            "wait",
            "azuremachine",
            "-l",
            &control_plane,
            "--for=condition=Ready",
            "--timeout=3m",
        ]),
        None,
    )?;
    run(
        &format!("kubectl wait {cluster} --for=condition=Available --timeout=5m"),
        &mut tools.kubectl(&["wait", &cluster, "--for=condition=Available", "--timeout=5m"]),
        None,
    )?;
    run(
        "kubectl get cluster-api",
        &mut tools.kubectl(&["get", "cluster-api", "--namespace", NAMESPACE]),
        None,
    )?;
    run(
        &format!("clusterctl describe cluster {name}"),
        &mut tools.clusterctl(&["describe", "cluster", name, "--namespace", NAMESPACE]),
        None,
    )?;
    show_workload_nodes(&tools, dir, name)?;
    println!(
        "\nCluster {name} converged in {:.1} s: it is Available, its control plane and both workers Ready.\n\
         Its API server answers at its endpoint through the emulator's proxy ({}).\n\
         Delete it with `kubectl delete cluster {name}`; `just down` stops the sandbox.",
        started.elapsed().as_secs_f64(),
        tools.state.proxy
    );
    Ok(())
}

/// Applies the add-ons (the ClusterResourceSets and their ConfigMaps), then the cluster's
/// manifest `file`, and labels the Cluster for the add-ons.
fn apply_with_add_ons(tools: &Tools<'_>, dir: &Path, name: &str, file: &Path) -> Result<(), String> {
    let addons_file: PathBuf = dir.join(format!("{name}-addons.yaml"));
    std::fs::write(&addons_file, addons(name, true))
        .map_err(|err| format!("cannot write {}: {err}", addons_file.display()))?;
    let addons_arg = addons_file.display().to_string();
    run(
        &format!("kubectl apply -f {addons_arg}    # a cloud controller manager and a CNI"),
        &mut tools.kubectl(&["apply", "-f", &addons_arg]),
        None,
    )?;
    let file_arg = file.display().to_string();
    run(
        &format!("kubectl apply -f {file_arg}"),
        &mut tools.kubectl(&["apply", "-f", &file_arg]),
        None,
    )?;
    let cluster = format!("cluster/{name}");
    let addons_label = format!("{ADDONS_LABEL}={name}");
    run(
        &format!("kubectl label {cluster} {addons_label}"),
        &mut tools.kubectl(&["label", &cluster, &addons_label, "--overwrite"]),
        None,
    )
}

/// The workload cluster's nodes, read as a user reads them: `clusterctl get kubeconfig` into a
/// file, then kubectl with it through the emulator's proxy.
fn show_workload_nodes(tools: &Tools<'_>, dir: &Path, name: &str) -> Result<(), String> {
    let kubeconfig = dir.join(format!("{name}.kubeconfig"));
    let workload_config = output(
        "clusterctl get kubeconfig",
        &mut tools.clusterctl(&["get", "kubeconfig", name, "--namespace", NAMESPACE]),
    )?;
    std::fs::write(&kubeconfig, workload_config)
        .map_err(|err| format!("cannot write {}: {err}", kubeconfig.display()))?;
    println!("\n$ clusterctl get kubeconfig {name} > {}", kubeconfig.display());
    let kubeconfig_arg = kubeconfig.display().to_string();
    run(
        &format!(
            "HTTPS_PROXY={} kubectl --kubeconfig {kubeconfig_arg} get nodes -o wide",
            tools.state.proxy
        ),
        tools
            .kubectl(&["--kubeconfig", &kubeconfig_arg, "get", "nodes", "-o", "wide"])
            .env("HTTPS_PROXY", &tools.state.proxy),
        None,
    )?;
    Ok(())
}

/// The Secret the flavor's AzureClusterIdentity reads its client secret from, applied so that a
/// second demo finds it in place.
fn create_identity_secret(tools: &Tools<'_>) -> Result<(), String> {
    let secret = output(
        "kubectl create secret generic ... --dry-run=client -o yaml",
        &mut tools.kubectl(&[
            "create",
            "secret",
            "generic",
            IDENTITY_SECRET,
            "--namespace",
            NAMESPACE,
            &format!(
                "--from-literal=clientSecret={}",
                arm_emulator::config::DEFAULT_CLIENT_SECRET
            ),
            "--dry-run=client",
            "-o",
            "yaml",
        ]),
    )?;
    run(
        &format!(
            "kubectl create secret generic {IDENTITY_SECRET} --from-literal=clientSecret=<the emulator's client secret> --dry-run=client -o yaml | kubectl apply -f -"
        ),
        &mut tools.kubectl(&["apply", "-f", "-"]),
        Some(&secret),
    )
}

/// Waits until an object of `kind` with labels `selector` exists (`kubectl wait` needs one).
fn wait_exists(tools: &Tools<'_>, kind: &str, selector: &str, timeout: Duration) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let found = output(
            "kubectl get",
            &mut tools.kubectl(&[
                "get",
                kind,
                "-l",
                selector,
                "-o",
                "name",
                "--namespace",
                NAMESPACE,
            ]),
        )?;
        if !found.is_empty() {
            return Ok(());
        }
        if started.elapsed() > timeout {
            return Err(format!(
                "no {kind} with labels {selector} appeared in {} s",
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
