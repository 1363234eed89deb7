//! The work queue of each kube-runtime controller, measured as Go's client-go measures its own,
//! under the `workqueue_*` names Cluster API dashboards read (`name` is the controller's label,
//! the kind in lower case).
//!
//! kube-runtime keeps its queue to itself, so the kit counts what goes in where it builds the
//! triggers: every watch event that passes a controller's filter, every object a watch of another
//! kind maps to ([`counted`]), every object of a periodic resync, and every requeue the run
//! wrapper asks for. An object waits from its first trigger until its reconcile starts; several
//! triggers meanwhile are one item, as kube-runtime runs one reconcile for them.
//!
//! | Metric | Type | Meaning |
//! |---|---|---|
//! | `workqueue_adds_total` | counter | triggers and requeues |
//! | `workqueue_depth` | gauge | objects triggered and not yet started, read when `/metrics` is scraped |
//! | `workqueue_queue_duration_seconds` | histogram | from an object's first trigger to its reconcile's start |
//! | `workqueue_work_duration_seconds` | histogram | how long reconciles took |
//! | `workqueue_retries_total` | counter | failed reconciles queued again after a backoff |
//!
//! A reconcile that its own requeue started has no trigger to time and adds no queue duration.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use metrics::{counter, histogram};

use crate::metrics::{ADDS_TOTAL, DEPTH, QUEUE_DURATION_SECONDS, RETRIES_TOTAL, WORK_DURATION_SECONDS};

/// The queue of one controller: the objects waiting, by key, since their first trigger.
#[derive(Debug)]
pub struct Queue {
    name: &'static str,
    waiting: Mutex<HashMap<String, Instant>>,
}

/// Every queue of the process, for `/metrics`.
static QUEUES: Mutex<Vec<Arc<Queue>>> = Mutex::new(Vec::new());

impl Queue {
    /// The queue of the controller `name` (its label), made on first use.
    pub fn named(name: &'static str) -> Arc<Self> {
        let mut queues = QUEUES.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(queue) = queues.iter().find(|queue| queue.name == name) {
            return queue.clone();
        }
        let queue = Arc::new(Self {
            name,
            waiting: Mutex::default(),
        });
        // Present from the start, as client-go's series are.
        counter!(ADDS_TOTAL, "name" => name).increment(0);
        counter!(RETRIES_TOTAL, "name" => name).increment(0);
        queues.push(queue.clone());
        queue
    }

    /// The queue of the controller of kind `K`.
    #[must_use]
    pub fn of<K: Resource<DynamicType = ()>>() -> Arc<Self> {
        Self::named(crate::metrics::controller_label(&K::kind(&())))
    }

    /// `object` was triggered: it waits from now unless it already waits.
    pub fn add<K: Resource<DynamicType = ()>>(&self, object: &ObjectRef<K>) {
        self.added();
        self.lock().entry(object.to_string()).or_insert_with(Instant::now);
    }

    /// Counts a trigger that puts no object in waiting.
    fn added(&self) {
        counter!(ADDS_TOTAL, "name" => self.name).increment(1);
    }

    /// The reconcile asked to run again (after a wait, or after a failure when `retry`).
    pub fn requeued(&self, retry: bool) {
        self.added();
        if retry {
            counter!(RETRIES_TOTAL, "name" => self.name).increment(1);
        }
    }

    /// The reconcile of `object` starts: it no longer waits.
    pub fn start<K: Resource<DynamicType = ()>>(&self, object: &ObjectRef<K>) {
        if let Some(since) = self.lock().remove(&object.to_string()) {
            histogram!(QUEUE_DURATION_SECONDS, "name" => self.name).record(since.elapsed());
        }
    }

    /// A reconcile took `elapsed`.
    pub fn worked(&self, elapsed: Duration) {
        histogram!(WORK_DURATION_SECONDS, "name" => self.name).record(elapsed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `mapper` (a watch of another kind mapping its objects to the controller's), counting each
/// object it gives as a trigger of the queue of `K`. Only an object in `store` (the controller's)
/// waits: kube-runtime drops a trigger for one it does not hold.
pub fn counted<K, T, I>(
    store: Store<K>,
    mapper: impl Fn(T) -> I + Send + Sync + 'static,
) -> impl Fn(T) -> Vec<ObjectRef<K>> + Send + Sync + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    I: IntoIterator<Item = ObjectRef<K>>,
{
    let queue = Queue::of::<K>();
    move |object| {
        let objects: Vec<ObjectRef<K>> = mapper(object).into_iter().collect();
        for object in &objects {
            if store.get(object).is_some() {
                queue.add(object);
            } else {
                queue.added();
            }
        }
        objects
    }
}

/// `ticks` (of a resync of every object of `store`), counting each object as a trigger of the
/// queue of `K` at each tick.
pub fn each_of<K, S>(store: Store<K>, ticks: S) -> impl futures_util::Stream<Item = ()> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    S: futures_util::Stream<Item = ()> + Send + 'static,
{
    use futures_util::StreamExt as _;

    let queue = Queue::of::<K>();
    ticks.inspect(move |()| {
        for object in store.state() {
            queue.add(&ObjectRef::from_obj(&*object));
        }
    })
}

/// The depth of every queue in Prometheus' text format, as it is now.
#[must_use]
pub fn render() -> String {
    let queues = QUEUES.lock().unwrap_or_else(PoisonError::into_inner);
    if queues.is_empty() {
        return String::new();
    }
    let mut out = format!("# HELP {DEPTH} Current depth of workqueue.\n# TYPE {DEPTH} gauge\n");
    for queue in queues.iter() {
        let _ = writeln!(out, "{DEPTH}{{name=\"{}\"}} {}", queue.name, queue.lock().len());
    }
    out
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn object(name: &str) -> ObjectRef<ConfigMap> {
        ObjectRef::new(name).within("n")
    }

    #[test]
    fn an_object_waits_once_from_its_first_trigger_until_its_reconcile_starts() {
        let queue = Queue::named("queuetest");
        queue.add(&object("a"));
        queue.add(&object("a"));
        queue.add(&object("b"));
        assert_eq!(queue.lock().len(), 2);
        assert!(
            render().contains("workqueue_depth{name=\"queuetest\"} 2"),
            "{}",
            render()
        );
        queue.start(&object("a"));
        assert!(render().contains("workqueue_depth{name=\"queuetest\"} 1"));
        // A mapped trigger waits only for an object the controller holds.
        let (store, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
        let mut held = ConfigMap::default();
        held.metadata.name = Some("held".into());
        held.metadata.namespace = Some("n".into());
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(held));
        let mapper = counted(store, |name: &str| [object(name)]);
        assert_eq!(mapper("held").len(), 1);
        assert_eq!(mapper("gone").len(), 1);
        // The queue of ConfigMaps is another one.
        assert_eq!(Queue::of::<ConfigMap>().lock().len(), 1);
        assert!(Arc::ptr_eq(&Queue::named("queuetest"), &queue));
    }
}
