//! The controller `main`: parse the flags, set up telemetry, connect, serve the probes and
//! metrics, run the controller's kube-runtime `Controller`s (whose reconciles wait for
//! leadership), and shut down in order.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use capz_kit::k8s_openapi::api::core::v1::ConfigMap;
//! use capz_kit::controller::ControllerId;
//! use capz_kit::kube::runtime::controller::Action;
//!
//! async fn reconcile(_: Arc<ConfigMap>, _: Arc<()>) -> Result<Action, std::convert::Infallible> {
//!     Ok(Action::await_change())
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let id = ControllerId::custom("example", "capz-example", "example.infrastructure.cluster.x-k8s.io");
//!     capz_kit::runner::main(id, env!("CARGO_PKG_VERSION"), |ctx| async move {
//!         ctx.run(ctx.controller(ctx.api::<ConfigMap>()), reconcile, Arc::new(()))
//!             .await;
//!         Ok(())
//!     })
//! }
//! ```
//!
//! What happens, in order:
//!
//! 1. The Prometheus recorder is installed, and the probe and metrics servers start: `/healthz`
//!    answers at once, `/readyz` once the API server has answered and each controller's kind can
//!    be listed.
//! 2. A client is built from `--kubeconfig`, else `KUBECONFIG`, `~/.kube/config` or the Pod's
//!    service account, and the API server is asked for its version.
//! 3. The controller's closure gets a [`Context`] and builds its controllers; each controller made
//!    by [`Context::controller`] watches `--namespace` (or all), only objects matching
//!    `--watch-filter`, runs `--concurrency` reconciles at a time, reconciles every object again
//!    every `--sync-period`, and drains when the shutdown signal comes. Its watches start at
//!    once, so a standby replica has warm caches; each waits out its own errors
//!    ([`crate::watch`]), so that one failing watch never holds up the others for long.
//! 4. With `--leader-elect`, reconciles ([`crate::reconciler`]) wait until this replica holds the
//!    Lease. Without it, the Lease is renewed all the same, as a heartbeat: peers read it to tell
//!    that the controller runs ([`crate::presence`]).
//! 5. When leadership is lost (another holder, or no renewal within the renew deadline — an API
//!    server that is down), the reconciles in flight are dropped at once (another replica may
//!    already be leading) and no new one starts; the replica campaigns again, and reconciles
//!    resume when it wins, with the watches' caches as they were kept. The process does not
//!    exit: a restarted Pod would wait out a crash-loop backoff.
//! 6. On SIGTERM or SIGINT (one [`Shutdown`] shared by all parts) the controllers stop taking
//!    work and finish the reconciles in flight, the leader keeps renewing meanwhile and then
//!    releases the Lease, and last the servers stop. The process exits 0.

use std::fmt::Debug;
use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use capz_api::AzureCluster;
use capz_api::capi::{Cluster, MachinePool};
use futures_util::Stream;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::core::NamespaceResourceScope;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, PredicateConfig, WatchStreamExt as _, controller, watcher};
use kube::{Api, Client, Config, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::cli::Args;
use crate::cluster::{Owners, cluster_name, members_of};
use crate::controller::ControllerId;
use crate::leader::{self, LeaderElector, LeaderError, Leadership, LeadershipSender, Timing};
use crate::presence::Presence;
use crate::queue::{Queue, counted};
use crate::report::Reporter;
use crate::server::{Readiness, Servers};
use crate::telemetry::Telemetry;
use crate::watch::{TriggerPause, cached, watch};

/// An error of a controller's own setup or run, as its closure returns it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why the runner stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The kubeconfig could not be read.
    #[error("cannot load the kubeconfig: {0}")]
    Kubeconfig(#[from] KubeconfigError),
    /// No client could be built or the API server did not answer.
    #[error("cannot reach the Kubernetes API server: {0}")]
    Connect(#[from] kube::Error),
    /// The Prometheus recorder could not be installed.
    #[error("cannot set up metrics: {0}")]
    Metrics(#[from] metrics_exporter_prometheus::BuildError),
    /// A server could not listen, or failed.
    #[error("{0}")]
    Serve(#[from] std::io::Error),
    /// The diagnostics endpoint's TLS could not be set up.
    #[error(transparent)]
    Diagnostics(#[from] crate::diagnostics::DiagnosticsError),
    /// Leader election failed or leadership was lost.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// The controller's own closure failed or panicked.
    #[error("the controller failed: {0}")]
    Controller(BoxError),
}

/// The one shutdown signal of a process, shared by its controllers, servers and leader elector.
/// Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(CancellationToken);

impl Shutdown {
    /// A signal not yet given.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives the signal: everything holding a clone starts shutting down.
    pub fn trigger(&self) {
        self.0.cancel();
    }

    /// Resolves once the signal is given.
    pub fn triggered(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.0.clone().cancelled_owned()
    }

    /// Gives the signal when the process receives SIGTERM or SIGINT.
    ///
    /// # Errors
    /// When the signal handlers cannot be installed.
    pub fn on_signals(&self) -> std::io::Result<()> {
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let token = self.0.clone();
        tokio::spawn(async move {
            let signal = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
                () = token.cancelled() => return,
            };
            tracing::info!(signal, "shutting down");
            token.cancel();
        });
        Ok(())
    }
}

/// What a controller's closure gets to build its kube-runtime controllers with.
#[derive(Clone)]
pub struct Context {
    id: ControllerId,
    client: Client,
    args: Arc<Args>,
    shutdown: Shutdown,
    readiness: Readiness,
    leadership: Leadership,
    lease_namespace: String,
}

impl Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id)
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// The controller's names.
    #[must_use]
    pub fn id(&self) -> ControllerId {
        self.id
    }

    /// The controller's name, such as `network`: the `controller` label of its metrics.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.id.name()
    }

    /// Whether this replica may reconcile now.
    #[must_use]
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// The event reporter of the controller.
    #[must_use]
    pub fn reporter(&self) -> Reporter {
        Reporter::new(self.client(), self.id.user_agent())
    }

    /// Tells whether peer controllers run, from their Leases beside this controller's own.
    #[must_use]
    pub fn presence(&self) -> Presence {
        Presence::new(self.client(), &self.lease_namespace)
    }

    /// The Kubernetes client.
    #[must_use]
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The parsed flags.
    #[must_use]
    pub fn args(&self) -> &Args {
        &self.args
    }

    /// The process's shutdown signal, for work the controller runs besides its controllers.
    #[must_use]
    pub fn shutdown(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// The API of a namespaced kind in the watched scope: `--namespace`, or all namespaces.
    #[must_use]
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match self.args.namespace() {
            Some(namespace) => Api::namespaced(self.client(), namespace),
            None => Api::all(self.client()),
        }
    }

    /// The watcher configuration of the reconciled kinds: `--watch-filter`'s label selector.
    /// [`Self::controller`] applies it to the kind it reconciles; apply it to other watches of
    /// Cluster API objects (a `Cluster` watch, say) so that they skip filtered-out clusters too.
    #[must_use]
    pub fn watcher_config(&self) -> watcher::Config {
        let config = watcher::Config::default();
        match self.args.watch_filter_selector() {
            Some(selector) => config.labels(&selector),
            None => config,
        }
    }

    /// A controller of the kind of `api`, configured from the flags: the watch filter, the
    /// kind's concurrency, a reconcile of every object each sync period, a graceful shutdown on
    /// the process's signal, readiness held back until the kind can be listed, and the kind's
    /// [`crate::queue`] counting its triggers.
    #[must_use]
    pub fn controller<K>(&self, api: Api<K>) -> Controller<K>
    where
        K: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        // No hash: every watch event wakes it.
        self.filtered_controller(api, |_| None)
    }

    /// [`Self::controller`] woken only by the watch events of the kind for which `changes` gives
    /// a new hash (see [`crate::filter::changes`]): its own status writes and peers' unrelated
    /// ones then cost no reconcile. Timers (requeues, the sync period) still wake it.
    #[must_use]
    pub fn filtered_controller<K>(
        &self,
        api: Api<K>,
        changes: impl Fn(&K) -> Option<u64> + Send + 'static,
    ) -> Controller<K>
    where
        K: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        use futures_util::TryStreamExt as _;

        let kind = K::kind(&()).into_owned();
        let config = self.watcher_config();
        self.readiness
            .wait_for_list(api.clone(), &config, self.shutdown.0.clone());
        let queue = Queue::of::<K>();
        let (reader, events) = cached(api, config);
        let events = events
            .applied_objects()
            .predicate_filter(changes, PredicateConfig::default())
            .inspect_ok(move |object| queue.add(&ObjectRef::from_obj(object)));
        let resync = crate::queue::each_of(reader.clone(), every(self.args.sync_period));
        Controller::for_stream(events, reader)
            // Each watch waits out its own errors: see crate::watch.
            .trigger_backoff(TriggerPause)
            .with_config(controller::Config::default().concurrency(self.args.concurrency_for(&kind)))
            .reconcile_all_on(resync)
            .graceful_shutdown_on(self.shutdown.triggered())
    }
}

impl Context {
    /// The controller of AzureClusters for a cluster-level controller: woken by the changes of an
    /// AzureCluster that `changes` hashes, and by the changes of the Cluster naming it that
    /// [`crate::filter::cluster_changes`] sees (pause, API server port, infrastructure reference).
    #[must_use]
    pub fn azure_cluster_controller(
        &self,
        changes: impl Fn(&AzureCluster) -> Option<u64> + Send + 'static,
    ) -> Controller<AzureCluster> {
        let clusters = watch(self.api::<Cluster>(), self.watcher_config())
            .touched_objects()
            .predicate_filter(crate::filter::cluster_changes, PredicateConfig::default());
        let controller = self.filtered_controller(self.api::<AzureCluster>(), changes);
        let store = controller.store();
        controller.watches_stream(
            clusters,
            counted(store, |cluster: Cluster| {
                let namespace = cluster.namespace()?;
                cluster
                    .spec
                    .infrastructure_ref
                    .filter(|reference| reference.is(capz_api::GROUP, "AzureCluster"))
                    .map(|reference| ObjectRef::new(&reference.name).within(&namespace))
            }),
        )
    }

    /// `controller`, also woken for the members of a cluster (the objects labelled with its name):
    /// by the events of their Cluster that change `cluster_changes`, and of their AzureCluster
    /// that change `azure_cluster_changes`. AzureClusters are watched without the watch filter's
    /// label, which not every setup puts on them; their members carry it.
    #[must_use]
    pub fn wake_cluster_members<K>(
        &self,
        controller: Controller<K>,
        cluster_changes: impl Fn(&Cluster) -> Option<u64> + Send + 'static,
        azure_cluster_changes: impl Fn(&AzureCluster) -> Option<u64> + Send + 'static,
    ) -> Controller<K>
    where
        K: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        Self::wake_members(
            controller,
            watch(self.api::<Cluster>(), self.watcher_config()),
            cluster_changes,
            watch(self.api::<AzureCluster>(), watcher::Config::default()),
            azure_cluster_changes,
        )
    }

    /// [`Self::wake_cluster_members`], keeping the Clusters and AzureClusters it watches in the
    /// stores of the [`Owners`] it also returns, for the reconciles to find them in.
    #[must_use]
    pub fn wake_cluster_members_with_owners<K>(
        &self,
        controller: Controller<K>,
        cluster_changes: impl Fn(&Cluster) -> Option<u64> + Send + 'static,
        azure_cluster_changes: impl Fn(&AzureCluster) -> Option<u64> + Send + 'static,
    ) -> (Controller<K>, Owners)
    where
        K: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let (clusters, cluster_events) = cached(self.api::<Cluster>(), self.watcher_config());
        let (azure_clusters, azure_cluster_events) =
            cached(self.api::<AzureCluster>(), watcher::Config::default());
        let controller = Self::wake_members(
            controller,
            cluster_events,
            cluster_changes,
            azure_cluster_events,
            azure_cluster_changes,
        );
        (controller, Owners::new(self.client(), clusters, azure_clusters))
    }

    fn wake_members<K>(
        controller: Controller<K>,
        clusters: impl Stream<Item = Result<watcher::Event<Cluster>, watcher::Error>> + Send + 'static,
        cluster_changes: impl Fn(&Cluster) -> Option<u64> + Send + 'static,
        azure_clusters: impl Stream<Item = Result<watcher::Event<AzureCluster>, watcher::Error>> + Send + 'static,
        azure_cluster_changes: impl Fn(&AzureCluster) -> Option<u64> + Send + 'static,
    ) -> Controller<K>
    where
        K: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let clusters = clusters
            .touched_objects()
            .predicate_filter(cluster_changes, PredicateConfig::default());
        let azure_clusters = azure_clusters
            .touched_objects()
            .predicate_filter(azure_cluster_changes, PredicateConfig::default());
        let store = controller.store();
        let by_cluster = store.clone();
        let by_azure_cluster = store.clone();
        controller
            .watches_stream(
                clusters,
                counted(store.clone(), move |cluster: Cluster| {
                    members_of(
                        &by_cluster,
                        &cluster.namespace().unwrap_or_default(),
                        &cluster.name_any(),
                    )
                }),
            )
            .watches_stream(
                azure_clusters,
                counted(store, move |azure_cluster: AzureCluster| {
                    let Some(name) = cluster_name(&azure_cluster) else {
                        return Vec::new();
                    };
                    members_of(
                        &by_azure_cluster,
                        &azure_cluster.namespace().unwrap_or_default(),
                        &name,
                    )
                }),
            )
    }

    /// `controller` of an infrastructure machine pool kind `K`, also woken by the events of the
    /// MachinePools naming one as their infrastructure that change `changes`.
    #[must_use]
    pub fn wake_on_machine_pools<K>(
        &self,
        controller: Controller<K>,
        changes: fn(&MachinePool) -> u64,
    ) -> Controller<K>
    where
        K: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let machine_pools = watch(self.api::<MachinePool>(), self.watcher_config())
            .touched_objects()
            .predicate_filter(
                move |pool: &MachinePool| Some(changes(pool)),
                PredicateConfig::default(),
            );
        let store = controller.store();
        controller.watches_stream(
            machine_pools,
            counted(store, |pool: MachinePool| {
                let reference = pool.spec.template.spec.infrastructure_ref.as_ref()?;
                reference
                    .is(&K::group(&()), &K::kind(&()))
                    .then(|| ObjectRef::new(&reference.name).within(&pool.namespace().unwrap_or_default()))
            }),
        )
    }

    /// `controller`, also woken for the members of a cluster (the objects of its Cluster) by the
    /// events of another kind `P` that change `changes`; `cluster_of` names the Cluster of a `P`
    /// (its own name for a Cluster). Objects of `P` are watched without the watch filter's label.
    #[must_use]
    pub fn wake_members_on<K, P>(
        &self,
        controller: Controller<K>,
        changes: impl Fn(&P) -> Option<u64> + Send + 'static,
        cluster_of: fn(&P) -> Option<String>,
    ) -> Controller<K>
    where
        K: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + Sync + 'static,
        P: Clone
            + Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + DeserializeOwned
            + Debug
            + Send
            + Sync
            + 'static,
    {
        let peers = watch(self.api::<P>(), watcher::Config::default())
            .touched_objects()
            .predicate_filter(changes, PredicateConfig::default());
        let store = controller.store();
        let members = store.clone();
        controller.watches_stream(
            peers,
            counted(store, move |peer: P| {
                let Some(cluster) = cluster_of(&peer) else {
                    return Vec::new();
                };
                members_of(&members, &peer.namespace().unwrap_or_default(), &cluster)
            }),
        )
    }
}

/// Ticks once per `period`, the first time one period from now.
fn every(period: Duration) -> impl Stream<Item = ()> + Send + 'static {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    futures_util::stream::unfold(interval, |mut interval| async move {
        interval.tick().await;
        Some(((), interval))
    })
}

/// The whole `main` of the controller `id` at `version` (its crate's): parses the flags, sets up
/// telemetry, runs [`run`] on a multi-threaded runtime until SIGTERM or SIGINT, and turns the
/// outcome into the exit code.
pub fn main<F, Fut>(id: ControllerId, version: &'static str, build: F) -> ExitCode
where
    F: FnOnce(Context) -> Fut,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let name = id.name();
    let command = <Args as clap::CommandFactory>::command()
        .name(id.user_agent())
        .version(version)
        .about(format!("The {name} controller of capz-rs"));
    let (args, without_effect) = crate::cli::manager_flags::parse::<Args>(command);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("capz-{name}: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    // Telemetry starts inside the runtime, which trace export sends from; its guard is dropped
    // before the runtime, so the last spans are flushed while the runtime still runs.
    let telemetry = runtime.block_on(async {
        Telemetry::new(&format!("capz-{name}"), args.log_format, &args.log_filter())
            .with_tracing(args.tracing.enable_tracing)
            .init()
    });
    let _telemetry = match telemetry {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("capz-{name}: {err}");
            return ExitCode::FAILURE;
        }
    };
    crate::cli::manager_flags::warn_without_effect(id.user_agent(), &without_effect);
    let result = runtime.block_on(async {
        let shutdown = Shutdown::new();
        shutdown.on_signals()?;
        run(id, args, shutdown, build).await
    });
    match result {
        Ok(()) => {
            tracing::info!(controller = name, "stopped");
            ExitCode::SUCCESS
        }
        Err(err) => {
            tracing::error!(controller = name, error = %err, "stopped");
            ExitCode::FAILURE
        }
    }
}

/// Runs the controller named `name` with `args` until `shutdown` is triggered (then `Ok`), or
/// until something fails, leadership included. `build` gets the [`Context`] once, after
/// leadership is acquired, and returns the future that runs the controllers; that future must end
/// when they have drained after the shutdown signal, as controllers from
/// [`Context::controller`] do.
///
/// # Errors
/// See [`RunError`].
pub async fn run<F, Fut>(id: ControllerId, args: Args, shutdown: Shutdown, build: F) -> Result<(), RunError>
where
    F: FnOnce(Context) -> Fut,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let prometheus = crate::metrics::install()?;
    let readiness = Readiness::default();
    let stop_servers = CancellationToken::new();
    let mut servers = Servers::start(
        &args.health_probe_bind_address,
        &args.metrics_bind_address,
        readiness.clone(),
        prometheus.clone(),
        stop_servers.clone(),
    )
    .await?;
    // Only then is a client made this early: bad flags are to fail before anything is contacted.
    if args.diagnostics.diagnostics_address.is_some() {
        servers
            .serve_diagnostics(
                &args.diagnostics,
                &args.tls,
                client(args.kubeconfig.as_deref()).await?,
                prometheus,
                &stop_servers,
            )
            .await?;
    }
    tracing::info!(
        controller = id.name(),
        health = ?servers.health_address(),
        metrics = ?servers.metrics_address(),
        diagnostics = ?servers.diagnostics_address(),
        "serving probes and metrics"
    );
    let result = run_controllers(id, args, shutdown, readiness, build).await;
    // The probes keep answering until the controllers have drained and the lease is released.
    stop_servers.cancel();
    let served = servers.wait().await;
    result?;
    Ok(served?)
}

async fn run_controllers<F, Fut>(
    id: ControllerId,
    args: Args,
    shutdown: Shutdown,
    readiness: Readiness,
    build: F,
) -> Result<(), RunError>
where
    F: FnOnce(Context) -> Fut,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let name = id.name();
    // Bad timing flags fail before anything is contacted; without leader election they time the
    // heartbeat.
    let timing = Timing::new(
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    )?;
    let client = client(args.kubeconfig.as_deref()).await?;
    let version = tokio::select! {
        () = shutdown.triggered() => return Ok(()),
        version = client.apiserver_version() => version?,
    };
    readiness.connected();
    tracing::info!(controller = name, server = %version.git_version, "connected to the API server");

    let lease = args
        .leader_election_id
        .clone()
        .unwrap_or_else(|| id.lease().to_owned());
    let lease_namespace = args
        .leader_election_namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_owned());
    let elector = LeaderElector::new(
        client.clone(),
        &lease_namespace,
        &lease,
        &leader::default_identity(),
        timing,
    );
    let stop_campaign = CancellationToken::new();
    let (leadership, campaign) = if args.leader_elect {
        tracing::info!(
            controller = name,
            %lease,
            namespace = %lease_namespace,
            identity = elector.identity(),
            "reconciles wait for leadership"
        );
        let (sender, leadership) = Leadership::new();
        let campaign = tokio::spawn(campaign(elector, sender, stop_campaign.clone()));
        (leadership, campaign)
    } else {
        let campaign = tokio::spawn(heartbeat(elector, stop_campaign.clone()));
        (Leadership::always(), campaign)
    };

    let context = Context {
        id,
        client,
        args: Arc::new(args),
        shutdown,
        readiness,
        leadership,
        lease_namespace,
    };
    let ended = tokio::spawn(build(context)).await;
    tracing::info!(controller = name, "controllers stopped");
    // The lease is held until the reconciles in flight have finished, then released.
    stop_campaign.cancel();
    if let Ok(Err(err)) = campaign.await {
        // Others take over after the lease duration instead.
        tracing::warn!(controller = name, error = %err, "the lease was not released");
    }
    match ended {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(RunError::Controller(err)),
        Err(join) => Err(RunError::Controller(Box::new(join))),
    }
}

/// Campaigns for the Lease until `stop`: grants `leadership` while it is held, revokes it when it
/// is lost and campaigns again; releases it at the end.
async fn campaign(
    mut elector: LeaderElector,
    leadership: LeadershipSender,
    stop: CancellationToken,
) -> Result<(), LeaderError> {
    loop {
        if !elector.acquire(stop.clone().cancelled_owned()).await {
            break;
        }
        leadership.set(true);
        crate::metrics::leader(elector.name(), true);
        tokio::select! {
            lost = elector.hold() => {
                leadership.set(false);
                crate::metrics::leader(elector.name(), false);
                tracing::warn!(error = %lost, "reconciles stopped; campaigning for the lease again");
            }
            () = stop.cancelled() => break,
        }
    }
    leadership.set(false);
    crate::metrics::leader(elector.name(), false);
    elector.release().await
}

/// Renews the Lease as a sign of life until `stop`, whoever else writes it; releases it at the
/// end.
async fn heartbeat(mut elector: LeaderElector, stop: CancellationToken) -> Result<(), LeaderError> {
    elector.beat(stop.cancelled()).await;
    elector.release().await
}

/// A client from the kubeconfig file `kubeconfig` (`--kubeconfig`), else from what kube infers
/// (KUBECONFIG, ~/.kube/config, the Pod's service account), through the environment's HTTPS proxy
/// unless `NO_PROXY` names the API server.
///
/// # Errors
/// When the kubeconfig cannot be read or names no usable cluster.
pub async fn client(kubeconfig: Option<&std::path::Path>) -> Result<Client, RunError> {
    let mut config = match kubeconfig {
        Some(path) => {
            Config::from_custom_kubeconfig(Kubeconfig::read_from(path)?, &KubeConfigOptions::default())
                .await?
        }
        None => Config::infer().await.map_err(kube::Error::InferConfig)?,
    };
    // The proxy as Go's clients choose it (kube's own choice matches NO_PROXY against the proxy).
    config.proxy_url = crate::workload::proxy_for(&config.cluster_url, &crate::workload::Environment::read());
    Ok(Client::try_from(config)?)
}
