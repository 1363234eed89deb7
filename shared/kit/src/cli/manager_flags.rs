//! The flags of CAPZ's manager (v1.26.0), so that a Deployment written or patched for CAPZ starts
//! here unchanged. A binary acts on those of them its own command line declares (under the same
//! name or as an alias); the others are taken out before parsing and reported in one warning at
//! startup, never refused.
//!
//! The set is CAPZ's `main.go`, Cluster API's manager options, the feature gates,
//! controller-runtime's `--kubeconfig` and klog's flags, as CAPZ's `--help` lists them.

use std::ffi::OsString;

/// One flag of CAPZ's manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManagerFlag {
    /// The long name, without dashes.
    pub name: &'static str,
    /// Whether it is a switch, which takes no separate value (`--flag` or `--flag=false`).
    pub switch: bool,
    /// A value CAPZ's manager accepts, as a manifest would give it (empty for switches).
    pub example: &'static str,
}

impl ManagerFlag {
    /// The flag with its example value, as one argument.
    #[must_use]
    pub fn with_example(&self) -> String {
        if self.switch {
            format!("--{}", self.name)
        } else {
            format!("--{}={}", self.name, self.example)
        }
    }
}

const fn value(name: &'static str, example: &'static str) -> ManagerFlag {
    ManagerFlag {
        name,
        switch: false,
        example,
    }
}

const fn switch(name: &'static str) -> ManagerFlag {
    ManagerFlag {
        name,
        switch: true,
        example: "",
    }
}

/// Every flag CAPZ v1.26.0's manager takes.
pub const MANAGER_FLAGS: &[ManagerFlag] = &[
    // CAPZ's own.
    switch("leader-elect"),
    value("leader-election-namespace", "capz-system"),
    value("leader-elect-lease-duration", "15s"),
    value("leader-elect-renew-deadline", "10s"),
    value("leader-elect-retry-period", "2s"),
    value("namespace", ""),
    value("watch-filter", ""),
    value("profiler-address", "localhost:6060"),
    value("azurecluster-concurrency", "10"),
    value("azuremachine-concurrency", "10"),
    value("azuremachinepool-concurrency", "10"),
    value("azuremachinepoolmachine-concurrency", "10"),
    value("debouncing-timer", "10s"),
    value("sync-period", "10m0s"),
    value("health-addr", ":9440"),
    value("webhook-port", "9443"),
    value("webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs/"),
    value("reconcile-timeout", "1h30m0s"),
    value("service-reconcile-timeout", "12s"),
    value("api-call-timeout", "2s"),
    value("reconciler-requeue", "15s"),
    switch("enable-tracing"),
    value("bootstrap-config-gvk", ""),
    value("disable-controllers-or-webhooks", "DisableASOSecretController"),
    // Cluster API's manager options.
    value("tls-min-version", "VersionTLS12"),
    value(
        "tls-cipher-suites",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
    ),
    value("diagnostics-address", ":8443"),
    switch("insecure-diagnostics"),
    value(
        "feature-gates",
        "MachinePool=true,AKSResourceHealth=false,EdgeZone=false,ASOAPI=true,APIServerILB=false",
    ),
    // controller-runtime's.
    value("kubeconfig", "/etc/kubernetes/kubeconfig"),
    // klog's, with their underscores.
    value("v", "4"),
    value("vmodule", "reconcile=2"),
    switch("logtostderr"),
    switch("alsologtostderr"),
    value("stderrthreshold", "2"),
    value("log_dir", "/tmp"),
    value("log_file", "/tmp/manager.log"),
    value("log_file_max_size", "1800"),
    value("log_backtrace_at", ":0"),
    switch("add_dir_header"),
    switch("skip_headers"),
    switch("skip_log_headers"),
    switch("one_output"),
];

/// A command line with the manager flags the binary does not act on taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    /// What is left, for the binary's parser.
    pub args: Vec<OsString>,
    /// The manager flags taken out, in the order given, each once.
    pub without_effect: Vec<&'static str>,
}

/// Takes out of `args` (the program's name first) the manager flags that `command` does not
/// declare, with their values. `--flag=value`, `--flag value` and klog's `-v` forms are
/// recognised; everything after `--` is left alone.
#[must_use]
pub fn without_inert_flags(args: impl IntoIterator<Item = OsString>, command: &clap::Command) -> CommandLine {
    let declared = |name: &str| {
        command.get_arguments().any(|arg| {
            arg.get_long() == Some(name)
                || arg
                    .get_all_aliases()
                    .is_some_and(|aliases| aliases.contains(&name))
        })
    };
    let mut kept = Vec::new();
    let mut without_effect = Vec::new();
    let mut args = args.into_iter();
    kept.extend(args.next());
    while let Some(arg) = args.next() {
        let Some(text) = arg.to_str() else {
            kept.push(arg);
            continue;
        };
        if text == "--" {
            kept.push(arg);
            kept.extend(args.by_ref());
            break;
        }
        let named = text.strip_prefix("--").or_else(|| {
            text.strip_prefix('-')
                .filter(|rest| *rest == "v" || rest.starts_with("v="))
        });
        let Some(named) = named else {
            kept.push(arg);
            continue;
        };
        let (name, inline_value) = named
            .split_once('=')
            .map_or((named, false), |(name, _)| (name, true));
        let Some(flag) = MANAGER_FLAGS.iter().find(|flag| flag.name == name) else {
            kept.push(arg);
            continue;
        };
        if declared(name) {
            kept.push(arg);
            continue;
        }
        if !flag.switch && !inline_value {
            // The value is the next argument, as pflag reads it.
            args.next();
        }
        if !without_effect.contains(&flag.name) {
            without_effect.push(flag.name);
        }
    }
    CommandLine {
        args: kept,
        without_effect,
    }
}

/// Parses the process's command line as `command` (`P`'s, perhaps renamed) after taking out the
/// manager flags it does not declare; returns their names too, for [`warn_without_effect`]. Exits
/// as clap does on bad flags, `--help` and `--version`.
#[must_use]
pub fn parse<P: clap::FromArgMatches>(command: clap::Command) -> (P, Vec<&'static str>) {
    let line = without_inert_flags(std::env::args_os(), &command);
    let parsed = command
        .try_get_matches_from(line.args)
        .and_then(|matches| P::from_arg_matches(&matches));
    match parsed {
        Ok(parsed) => (parsed, line.without_effect),
        Err(err) => err.exit(),
    }
}

/// Logs, once, which of CAPZ's manager flags were given but change nothing in `binary`.
pub fn warn_without_effect(binary: &str, flags: &[&str]) {
    if flags.is_empty() {
        return;
    }
    let flags: Vec<String> = flags.iter().map(|name| format!("--{name}")).collect();
    tracing::warn!(
        flags = %flags.join(" "),
        "these flags of CAPZ's manager are accepted but have no effect in {binary}"
    );
}

#[cfg(test)]
mod tests {
    use clap::{Arg, ArgAction, Command};

    use super::*;

    fn command() -> Command {
        Command::new("test")
            .arg(Arg::new("namespace").long("namespace"))
            .arg(
                Arg::new("health")
                    .long("health-probe-bind-address")
                    .alias("health-addr"),
            )
            .arg(Arg::new("elect").long("leader-elect").action(ArgAction::SetTrue))
            .arg(Arg::new("rest").num_args(0..).last(true))
    }

    fn strip(args: &[&str]) -> CommandLine {
        without_inert_flags(
            std::iter::once("test")
                .chain(args.iter().copied())
                .map(OsString::from),
            &command(),
        )
    }

    fn strings(line: &CommandLine) -> Vec<&str> {
        line.args
            .iter()
            .skip(1)
            .map(|arg| arg.to_str().unwrap())
            .collect()
    }

    #[test]
    fn declared_flags_and_their_aliases_stay() {
        let line = strip(&[
            "--namespace",
            "a",
            "--health-addr=:9440",
            "--leader-elect",
            "--own=1",
        ]);
        assert_eq!(
            strings(&line),
            [
                "--namespace",
                "a",
                "--health-addr=:9440",
                "--leader-elect",
                "--own=1"
            ]
        );
        assert!(line.without_effect.is_empty());
    }

    #[test]
    fn other_manager_flags_go_with_their_values() {
        let line = strip(&[
            "--v=4",
            "-v",
            "2",
            "--vmodule",
            "x=1",
            "--logtostderr",
            "--namespace=a",
            "--skip_headers=false",
            "--reconcile-timeout",
            "1h",
            "--v=5",
            "--",
            "--v=3",
        ]);
        assert_eq!(strings(&line), ["--namespace=a", "--", "--v=3"]);
        assert_eq!(
            line.without_effect,
            ["v", "vmodule", "logtostderr", "skip_headers", "reconcile-timeout"]
        );
    }

    #[test]
    fn every_manager_flag_is_accepted_whether_declared_or_not() {
        let mut args = Vec::new();
        for flag in MANAGER_FLAGS {
            args.push(format!("--{}", flag.name));
            if !flag.switch {
                args.push("x".to_owned());
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let line = strip(&refs);
        // Only the declared ones and their values are left.
        assert_eq!(
            strings(&line),
            ["--leader-elect", "--namespace", "x", "--health-addr", "x"]
        );
        assert_eq!(line.without_effect.len(), MANAGER_FLAGS.len() - 3);
    }
}
