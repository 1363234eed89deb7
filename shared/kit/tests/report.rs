//! The reporter's events against a real API server: one Event per happening, repeats counted on
//! its series.

use capz_kit::conditions::Reason;
use capz_kit::kube::api::{Api, ListParams};
use capz_kit::report::Reporter;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[tokio::test]
async fn a_repeated_event_counts_on_the_first_ones_series() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        let reporter = Reporter::new(client.clone(), "capz-test");
        let regarding = |name: &str| ObjectReference {
            api_version: Some("infrastructure.cluster.x-k8s.io/v1beta1".to_owned()),
            kind: Some("AzureMachine".to_owned()),
            name: Some(name.to_owned()),
            namespace: Some(namespace.clone()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        };
        let machine = regarding("m1");
        reporter
            .normal(&machine, &Reason::CREATED, "Create vm", "created vm".to_owned())
            .await;
        reporter
            .normal(&machine, &Reason::CREATED, "Create vm", "created vm".to_owned())
            .await;
        reporter
            .normal(&machine, &Reason::CREATED, "Create nic", "created nic".to_owned())
            .await;
        reporter
            .warning(
                &regarding("m2"),
                &Reason::CREATED,
                "Create vm",
                "refused".to_owned(),
            )
            .await;

        let mut events: Vec<Event> = Api::<Event>::namespaced(client.clone(), &namespace)
            .list(&ListParams::default())
            .await?
            .items;
        events.sort_by_key(|event| (event.regarding.clone().and_then(|r| r.name), event.action.clone()));
        let seen: Vec<_> = events
            .iter()
            .map(|event| {
                (
                    event.regarding.as_ref().and_then(|r| r.name.clone()),
                    event.type_.clone(),
                    event.action.clone(),
                    event.reporting_controller.clone(),
                    event.series.as_ref().map(|series| series.count),
                )
            })
            .collect();
        let some = |text: &str| Some(text.to_owned());
        assert_eq!(
            seen,
            [
                (
                    some("m1"),
                    some("Normal"),
                    some("Create nic"),
                    some("capz-test"),
                    None
                ),
                (
                    some("m1"),
                    some("Normal"),
                    some("Create vm"),
                    some("capz-test"),
                    Some(2)
                ),
                (
                    some("m2"),
                    some("Warning"),
                    some("Create vm"),
                    some("capz-test"),
                    None
                ),
            ]
        );
        Ok(())
    })
    .await?
}
