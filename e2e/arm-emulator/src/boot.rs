//! What a machine would boot: its custom data read as cloud-init and kubeadm would read it.
//!
//! Cluster API's kubeadm bootstrap provider hands a machine a `#cloud-config` document whose
//! `write_files` carry the kubeadm configuration (`/run/kubeadm/kubeadm.yaml` for the first
//! control-plane machine, `/run/kubeadm/kubeadm-join-config.yaml` for the others) and, for control
//! planes, the cluster's certificate authorities under `/etc/kubernetes/pki`; its `runcmd` runs
//! `kubeadm init` or `kubeadm join`. A machine whose data cloud-init or kubeadm would not take
//! gets the reason instead, as such a machine never joins a cluster. Unless asked for with
//! [`Secrets::Reveal`], key material and bootstrap tokens are never answered: only which files a
//! machine carries and the fingerprint of its cluster CA certificate. A program standing in for
//! the machines' Kubernetes (one serving a workload cluster's API) asks for them, to sign with
//! the cluster's own CAs.

use std::fmt::Write as _;

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// Where kubeadm keeps its certificates; keys are answered by their path under it.
const PKI: &str = "/etc/kubernetes/pki/";

/// The files kubeadm reads its certificate authorities from.
const AUTHORITIES: &[&str] = &[
    "/etc/kubernetes/pki/ca.crt",
    "/etc/kubernetes/pki/ca.key",
    "/etc/kubernetes/pki/etcd/ca.crt",
    "/etc/kubernetes/pki/etcd/ca.key",
    "/etc/kubernetes/pki/front-proxy-ca.crt",
    "/etc/kubernetes/pki/front-proxy-ca.key",
    "/etc/kubernetes/pki/sa.key",
    "/etc/kubernetes/pki/sa.pub",
];

/// What a control-plane machine needs to run or join the control plane.
const CONTROL_PLANE_NEEDS: &[&str] = &[
    "/etc/kubernetes/pki/ca.crt",
    "/etc/kubernetes/pki/ca.key",
    "/etc/kubernetes/pki/etcd/ca.crt",
    "/etc/kubernetes/pki/etcd/ca.key",
];

/// How kubeadm brings a machine into its cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `kubeadm init`: the first control-plane machine.
    Init,
    /// `kubeadm join` with a `controlPlane` section.
    JoinControlPlane,
    /// `kubeadm join` of a worker.
    JoinWorker,
}

impl Role {
    const fn name(self) -> &'static str {
        match self {
            Self::Init => "init",
            Self::JoinControlPlane => "joinControlPlane",
            Self::JoinWorker => "joinWorker",
        }
    }
}

/// Whether an answer carries the cluster's keys and the bootstrap token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Secrets {
    Withhold,
    Reveal,
}

/// Reads a machine's custom data (base64, as ARM stores it); `computer_name` stands for the
/// instance metadata's `local_hostname` the configuration names the node by.
///
/// # Errors
/// Why cloud-init or kubeadm would not bring the machine into a cluster.
pub(crate) fn read(custom_data: &str, computer_name: &str, secrets: Secrets) -> Result<Value, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(custom_data.trim())
        .map_err(|_| "the custom data is not base64".to_owned())?;
    let text = String::from_utf8(bytes).map_err(|_| "the custom data is not UTF-8 text".to_owned())?;
    let config = cloud_config(&text)?;
    let files = write_files(&config)?;
    let (role, config_path) = kubeadm_command(&config)?;
    let kubeadm = files
        .get(&config_path)
        .ok_or_else(|| format!("kubeadm reads {config_path}, which write_files does not write"))?;
    let documents = yaml_documents(kubeadm)
        .map_err(|error| format!("{config_path} is not a kubeadm configuration: {error}"))?;
    let of_kind = |kind: &str| documents.iter().find(|document| document["kind"] == kind);
    let (configuration, role) = match role {
        Role::Init => (
            of_kind("InitConfiguration").ok_or_else(|| format!("{config_path} has no InitConfiguration"))?,
            role,
        ),
        Role::JoinControlPlane | Role::JoinWorker => {
            let join = of_kind("JoinConfiguration")
                .ok_or_else(|| format!("{config_path} has no JoinConfiguration"))?;
            let role = if join.get("controlPlane").is_some_and(|plane| !plane.is_null()) {
                Role::JoinControlPlane
            } else {
                Role::JoinWorker
            };
            (join, role)
        }
    };
    let node_name = configuration
        .pointer("/nodeRegistration/name")
        .and_then(Value::as_str)
        .map_or_else(
            || computer_name.to_owned(),
            |name| local_hostname(name, computer_name),
        );
    let cluster = of_kind("ClusterConfiguration");
    let endpoint = match role {
        Role::Init => cluster.and_then(|cluster| cluster.get("controlPlaneEndpoint")),
        Role::JoinControlPlane | Role::JoinWorker => {
            configuration.pointer("/discovery/bootstrapToken/apiServerEndpoint")
        }
    }
    .and_then(Value::as_str)
    .ok_or_else(|| format!("{config_path} names no control plane endpoint"))?;
    if role != Role::JoinWorker {
        for needed in CONTROL_PLANE_NEEDS {
            if !files.contains_key(*needed) {
                return Err(format!(
                    "a control-plane machine needs {needed}, which write_files does not write"
                ));
            }
        }
    }
    let mut boot = json!({
        "kind": "kubeadm",
        "role": role.name(),
        "nodeName": node_name,
        "controlPlaneEndpoint": endpoint,
        "certificates": AUTHORITIES.iter().filter(|path| files.contains_key(**path)).collect::<Vec<_>>(),
    });
    if let Some(cluster) = cluster {
        for (field, shown) in [
            ("kubernetesVersion", "kubernetesVersion"),
            ("clusterName", "clusterName"),
        ] {
            if let Some(value) = cluster.get(field).filter(|value| value.is_string()) {
                boot[shown] = value.clone();
            }
        }
    }
    if let Some(ca) = files.get("/etc/kubernetes/pki/ca.crt") {
        boot["caFingerprint"] = json!(fingerprint(ca)?);
    }
    // The node's registration as written, its name as the node would be called (the template
    // filled in): what a stand-in kubelet registers the node with.
    let mut registration = configuration
        .get("nodeRegistration")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    registration.insert("name".into(), Value::String(node_name));
    boot["nodeRegistration"] = Value::Object(registration);
    if role == Role::Init
        && let Some(cluster) = cluster
    {
        boot["clusterConfiguration"] = cluster.clone();
    }
    if secrets == Secrets::Reveal {
        reveal(&mut boot, &files, configuration, role);
    }
    Ok(boot)
}

/// Adds what only a stand-in for the cluster may see: the PEM of the certificate authorities and
/// service account keys the machine writes, by path under `/etc/kubernetes/pki`, and a join's
/// bootstrap token.
fn reveal(boot: &mut Value, files: &Map<String, Value>, configuration: &Value, role: Role) {
    let keys: Map<String, Value> = AUTHORITIES
        .iter()
        .filter_map(|path| {
            let content = files.get(*path)?;
            let relative = path.strip_prefix(PKI).unwrap_or(path);
            Some((relative.to_owned(), content.clone()))
        })
        .collect();
    boot["keys"] = Value::Object(keys);
    if role != Role::Init
        && let Some(token) = configuration
            .pointer("/discovery/bootstrapToken/token")
            .filter(|token| token.is_string())
    {
        boot["bootstrapToken"] = token.clone();
    }
}

/// The `#cloud-config` document: comment lines may come first (the bootstrap provider's
/// `## template: jinja`), one of them `#cloud-config`.
fn cloud_config(text: &str) -> Result<Map<String, Value>, String> {
    let header = text
        .lines()
        .take_while(|line| line.starts_with('#') || line.trim().is_empty())
        .any(|line| line.trim_end() == "#cloud-config");
    if !header {
        return Err("the custom data is not a #cloud-config document".to_owned());
    }
    match serde_saphyr::from_str::<Value>(text) {
        Ok(Value::Object(config)) => Ok(config),
        Ok(_) => Err("the #cloud-config document is not a mapping".to_owned()),
        Err(error) => Err(format!("the #cloud-config document is not YAML: {error}")),
    }
}

/// The files `write_files` writes, by path, decoded.
fn write_files(config: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut files = Map::new();
    for (index, file) in config
        .get("write_files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = file["path"]
            .as_str()
            .ok_or_else(|| format!("write_files[{index}] has no path"))?;
        let content = file["content"].as_str().unwrap_or_default();
        let content = match file["encoding"].as_str() {
            None | Some("text/plain") => content.to_owned(),
            Some("b64" | "base64") => base64::engine::general_purpose::STANDARD
                .decode(content.split_whitespace().collect::<String>())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| format!("write_files[{index}] ({path}) is not the base64 it says it is"))?,
            Some(other) => {
                return Err(format!(
                    "write_files[{index}] ({path}) has an encoding this reader does not take: {other}"
                ));
            }
        };
        files.insert(path.to_owned(), Value::String(content));
    }
    Ok(files)
}

/// The kubeadm command `runcmd` runs, and the configuration file it reads.
fn kubeadm_command(config: &Map<String, Value>) -> Result<(Role, String), String> {
    let commands: Vec<String> = config
        .get("runcmd")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|command| match command {
            Value::Array(words) => words
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            other => other.as_str().unwrap_or_default().to_owned(),
        })
        .collect();
    for command in &commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        let Some(at) = words
            .windows(2)
            .position(|pair| pair[0] == "kubeadm" && matches!(pair[1], "init" | "join"))
        else {
            continue;
        };
        let role = if words[at + 1] == "init" {
            Role::Init
        } else {
            Role::JoinWorker
        };
        let path = words[at..]
            .windows(2)
            .find(|pair| pair[0] == "--config")
            .map(|pair| pair[1].to_owned())
            .or_else(|| {
                words[at..]
                    .iter()
                    .find_map(|word| word.strip_prefix("--config="))
                    .map(str::to_owned)
            })
            .ok_or_else(|| format!("`{command}` names no --config file"))?;
        return Ok((role, path));
    }
    Err("runcmd runs neither kubeadm init nor kubeadm join".to_owned())
}

/// The documents of a multi-document YAML file.
fn yaml_documents(text: &Value) -> Result<Vec<Value>, String> {
    let text = text.as_str().unwrap_or_default();
    let mut documents = Vec::new();
    let mut current = String::new();
    for line in text.lines().chain(std::iter::once("---")) {
        if line.trim_end() == "---" {
            if !current.trim().is_empty() {
                let document: Value = serde_saphyr::from_str(&current).map_err(|error| error.to_string())?;
                documents.push(document);
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    Ok(documents)
}

/// A node name with cloud-init's instance-metadata template filled in.
fn local_hostname(name: &str, computer_name: &str) -> String {
    let mut filled = name.to_owned();
    for template in [
        r#"{{ ds.meta_data["local_hostname"] }}"#,
        "{{ ds.meta_data.local_hostname }}",
        "{{ v1.local_hostname }}",
    ] {
        filled = filled.replace(template, computer_name);
    }
    filled
}

/// `sha256:<hex>` of the DER of a PEM certificate.
fn fingerprint(pem: &Value) -> Result<String, String> {
    let pem = pem.as_str().unwrap_or_default();
    let body: String = pem
        .lines()
        .skip_while(|line| !line.starts_with("-----BEGIN CERTIFICATE-----"))
        .skip(1)
        .take_while(|line| !line.starts_with("-----END CERTIFICATE-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .ok()
        .filter(|der| !der.is_empty())
        .ok_or_else(|| "/etc/kubernetes/pki/ca.crt is not a PEM certificate".to_owned())?;
    let digest = ring::digest::digest(&ring::digest::SHA256, &der);
    let mut text = String::from("sha256:");
    for byte in digest.as_ref() {
        let _ = write!(text, "{byte:02x}");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::{Secrets, read};

    const CA: &str = "-----BEGIN CERTIFICATE-----\nAAECAwQ=\n-----END CERTIFICATE-----\n";

    fn encode(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    /// A control plane's first machine, as the bootstrap provider lays it out.
    fn init(extra_files: &str) -> String {
        format!(
            r#"## template: jinja
#cloud-config

write_files:
-   path: /etc/kubernetes/pki/ca.crt
    owner: root:root
    permissions: '0640'
    content: |
      {}
-   path: /etc/kubernetes/pki/ca.key
    content: SECRET-KEY-MATERIAL
-   path: /etc/kubernetes/pki/etcd/ca.crt
    content: cert
-   path: /etc/kubernetes/pki/etcd/ca.key
    encoding: base64
    content: a2V5
{extra_files}-   path: /run/kubeadm/kubeadm.yaml
    content: |
      ---
      apiVersion: kubeadm.k8s.io/v1beta4
      kind: ClusterConfiguration
      clusterName: demo
      controlPlaneEndpoint: demo-1a2b.westeurope.cloudapp.azure.com:6443
      kubernetesVersion: v1.33.5
      ---
      apiVersion: kubeadm.k8s.io/v1beta4
      kind: InitConfiguration
      nodeRegistration:
        name: '{{{{ ds.meta_data["local_hostname"] }}}}'
runcmd:
  - 'kubeadm init --config /run/kubeadm/kubeadm.yaml  && echo success > /run/cluster-api/bootstrap-success.complete'
"#,
            CA.trim_end().replace('\n', "\n      ")
        )
    }

    /// A machine joining with a bootstrap token; `control_plane` is its `controlPlane` section.
    fn join(control_plane: &str) -> String {
        format!(
            "#cloud-config\nwrite_files:\n- path: /run/kubeadm/kubeadm-join-config.yaml\n  content: |\n    apiVersion: kubeadm.k8s.io/v1beta4\n    kind: JoinConfiguration\n    discovery:\n      bootstrapToken:\n        apiServerEndpoint: 20.1.2.3:6443\n        token: abcdef.0123456789abcdef\n    nodeRegistration:\n      name: '{{{{ ds.meta_data.local_hostname }}}}'\n      kubeletExtraArgs:\n      - name: cloud-provider\n        value: external\n      taints: []\n{control_plane}runcmd:\n- - kubeadm\n  - join\n  - --config\n  - /run/kubeadm/kubeadm-join-config.yaml\n"
        )
    }

    #[test]
    fn a_first_control_plane_machine_initializes_its_cluster() {
        let boot = read(&encode(&init("")), "demo-control-plane-abcde", Secrets::Withhold).unwrap();
        assert_eq!(boot["role"], "init");
        assert_eq!(boot["nodeName"], "demo-control-plane-abcde");
        assert_eq!(
            boot["controlPlaneEndpoint"],
            "demo-1a2b.westeurope.cloudapp.azure.com:6443"
        );
        assert_eq!(boot["kubernetesVersion"], "v1.33.5");
        assert_eq!(boot["clusterName"], "demo");
        assert_eq!(boot["certificates"].as_array().unwrap().len(), 4);
        assert!(boot["caFingerprint"].as_str().unwrap().starts_with("sha256:"));
        assert_eq!(
            boot["nodeRegistration"]["name"], "demo-control-plane-abcde",
            "{boot}"
        );
        assert_eq!(boot["clusterConfiguration"]["kind"], "ClusterConfiguration");
        assert_eq!(boot["clusterConfiguration"]["clusterName"], "demo");
        assert!(
            !boot.to_string().contains("SECRET-KEY-MATERIAL"),
            "no key material: {boot}"
        );
        assert!(boot.get("keys").is_none(), "{boot}");
    }

    #[test]
    fn keys_are_answered_only_when_asked_for() {
        let boot = read(&encode(&init("")), "cp-0", Secrets::Reveal).unwrap();
        let keys = boot["keys"].as_object().unwrap();
        assert_eq!(
            keys.keys().map(String::as_str).collect::<Vec<_>>(),
            ["ca.crt", "ca.key", "etcd/ca.crt", "etcd/ca.key"]
        );
        assert_eq!(keys["ca.key"], "SECRET-KEY-MATERIAL");
        assert_eq!(keys["etcd/ca.key"], "key", "decoded as cloud-init writes it");
        assert!(
            keys["ca.crt"]
                .as_str()
                .unwrap()
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        assert!(boot.get("bootstrapToken").is_none(), "{boot}");

        let plain = read(&encode(&join("")), "md-0-xyz", Secrets::Withhold).unwrap();
        assert!(!plain.to_string().contains("0123456789abcdef"), "{plain}");
        assert!(plain.get("bootstrapToken").is_none(), "{plain}");
        let revealed = read(&encode(&join("")), "md-0-xyz", Secrets::Reveal).unwrap();
        assert_eq!(revealed["bootstrapToken"], "abcdef.0123456789abcdef");
        assert_eq!(revealed["keys"], serde_json::json!({}));
    }

    #[test]
    fn workers_and_control_planes_join() {
        let worker = read(&encode(&join("")), "md-0-xyz", Secrets::Withhold).unwrap();
        assert_eq!(worker["role"], "joinWorker");
        assert_eq!(worker["nodeName"], "md-0-xyz");
        assert_eq!(worker["controlPlaneEndpoint"], "20.1.2.3:6443");
        assert_eq!(
            worker["nodeRegistration"],
            serde_json::json!({
                "name": "md-0-xyz",
                "kubeletExtraArgs": [{"name": "cloud-provider", "value": "external"}],
                "taints": [],
            })
        );
        assert!(worker.get("clusterConfiguration").is_none(), "{worker}");
        let control_plane = read(
            &encode(&join("    controlPlane:\n      localAPIEndpoint: {}\n")),
            "cp-1",
            Secrets::Withhold,
        );
        // A control plane joining without the cluster's CAs cannot serve.
        assert!(control_plane.unwrap_err().contains("/etc/kubernetes/pki/ca.crt"));
    }

    #[test]
    fn data_kubeadm_would_not_take_says_why() {
        let cases = [
            ("not base64 at all!".to_owned(), "base64"),
            (encode("#!/bin/bash\necho hi\n"), "#cloud-config"),
            (
                encode("#cloud-config\nruncmd: [echo hi]\n"),
                "neither kubeadm init nor kubeadm join",
            ),
            (
                encode("#cloud-config\nruncmd: ['kubeadm init --config /run/kubeadm/kubeadm.yaml']\n"),
                "does not write",
            ),
            (
                encode("#cloud-config\nwrite_files: [{path: /x, content: 'a', encoding: gz+b64}]\n"),
                "encoding",
            ),
            (
                encode(
                    &init("")
                        .replace("  - 'kubeadm init", "  - 'kubeadm init --dry-run")
                        .replace("--config /run/kubeadm/kubeadm.yaml", ""),
                ),
                "--config",
            ),
            (
                encode(&init("").replace("kind: InitConfiguration", "kind: Nothing")),
                "InitConfiguration",
            ),
        ];
        for (data, why) in cases {
            let refused = read(&data, "vm", Secrets::Withhold).unwrap_err();
            assert!(refused.contains(why), "{refused} (wanted {why})");
        }
    }
}
