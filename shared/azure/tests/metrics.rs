//! The metrics of ARM requests and token refreshes, recorded as the client talks to the emulator:
//! each with its bounded labels, none naming a subscription, a group or a secret.

mod common;

use arm_emulator::Config;
use capz_azure::metrics::{
    ARM_RATELIMIT_REMAINING, ARM_REQUEST_DURATION_SECONDS, ARM_REQUESTS_TOTAL, TOKEN_REFRESHES_TOTAL,
};
use capz_azure::{ApiVersion, ArmClient, Credential, Outcome, ResourceId};
use common::{CLIENT_ID, LOCATION, SUBSCRIPTION, TENANT, TestResult, start};
use metrics_util::CompositeKey;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde_json::{Value, json};

const GROUPS: ApiVersion = ApiVersion::new("2021-04-01");

type Recorded = Vec<(
    CompositeKey,
    Option<metrics::Unit>,
    Option<metrics::SharedString>,
    DebugValue,
)>;

/// The value recorded for `name` with exactly `labels`.
fn value<'a>(recorded: &'a Recorded, name: &str, labels: &[(&str, &str)]) -> Option<&'a DebugValue> {
    recorded
        .iter()
        .find(|(key, ..)| {
            let key = key.key();
            let mut found: Vec<(&str, &str)> =
                key.labels().map(|label| (label.key(), label.value())).collect();
            let mut wanted = labels.to_vec();
            found.sort_unstable();
            wanted.sort_unstable();
            key.name() == name && found == wanted
        })
        .map(|(.., value)| value)
}

#[tokio::test]
async fn requests_budgets_and_token_refreshes_are_recorded_with_bounded_labels() -> TestResult {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // The test runtime polls everything on this thread, so a thread-local recorder sees it all.
    let _recorder = metrics::set_default_local_recorder(&recorder);

    let azure = start(Config::default()).await?;
    let client = azure.client()?;
    let group = ResourceId::resource_group(SUBSCRIPTION.parse()?, "metrics-group".parse()?);
    let created = client
        .put::<_, Value>(&group, &GROUPS, &json!({ "location": LOCATION }))
        .await?;
    assert!(matches!(created, Outcome::Done(_)));
    client.get::<Value>(&group, &GROUPS).await?;
    let missing = ResourceId::resource_group(SUBSCRIPTION.parse()?, "missing".parse()?);
    client.get::<Value>(&missing, &GROUPS).await.unwrap_err();

    // Counters and histograms are drained by each snapshot: take one, read it.
    let snapshot = snapshotter.snapshot().into_vec();
    let groups = "Microsoft.Resources/resourceGroups";
    let requests = |operation, status_class| {
        value(
            &snapshot,
            ARM_REQUESTS_TOTAL,
            &[
                ("operation", operation),
                ("resource_type", groups),
                ("status_class", status_class),
            ],
        )
    };
    assert_eq!(requests("put", "2xx"), Some(&DebugValue::Counter(1)));
    assert_eq!(requests("get", "2xx"), Some(&DebugValue::Counter(1)));
    assert_eq!(requests("get", "4xx"), Some(&DebugValue::Counter(1)));
    let Some(DebugValue::Histogram(durations)) = value(
        &snapshot,
        ARM_REQUEST_DURATION_SECONDS,
        &[("operation", "get"), ("resource_type", groups)],
    ) else {
        return Err("no duration recorded for the reads".into());
    };
    assert_eq!(durations.len(), 2);
    assert!(
        durations
            .iter()
            .all(|seconds| seconds.0 > 0.0 && seconds.0 < 10.0)
    );
    for kind in ["reads", "writes"] {
        assert!(
            matches!(
                value(&snapshot, ARM_RATELIMIT_REMAINING, &[("kind", kind)]),
                Some(DebugValue::Gauge(left)) if left.0 > 0.0
            ),
            "no {kind} budget"
        );
    }
    // Three requests, one token: the cache answered the other two.
    assert_eq!(
        value(
            &snapshot,
            TOKEN_REFRESHES_TOTAL,
            &[("credential_type", "client_secret"), ("outcome", "success")]
        ),
        Some(&DebugValue::Counter(1))
    );

    let wrong = Credential::client_secret(&azure.cloud, &azure.http, TENANT, CLIENT_ID, "not-the-secret")?;
    let refused = ArmClient::new(&azure.cloud, wrong, &azure.http, "test");
    refused.get::<Value>(&group, &GROUPS).await.unwrap_err();
    let snapshot = snapshotter.snapshot().into_vec();
    assert_eq!(
        value(
            &snapshot,
            TOKEN_REFRESHES_TOTAL,
            &[("credential_type", "client_secret"), ("outcome", "rejected")]
        ),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        value(
            &snapshot,
            ARM_REQUESTS_TOTAL,
            &[
                ("operation", "get"),
                ("resource_type", groups),
                ("status_class", "error")
            ]
        ),
        Some(&DebugValue::Counter(1)),
        "a request that never got an answer counts as an error"
    );

    for (key, ..) in &snapshot {
        for label in key.key().labels() {
            for secret_or_unbounded in [SUBSCRIPTION, "metrics-group", "missing", "not-the-secret"] {
                assert!(
                    !label.value().contains(secret_or_unbounded),
                    "{} carries {}",
                    key.key().name(),
                    label.value()
                );
            }
        }
    }
    Ok(())
}
