//! Serving checks without a server: the answer similarity, error bodies in both vLLM
//! shapes, URL joining and the proxy bypass. The HTTP paths run against the stub server
//! in tests/tests/mocked/demo_serving.rs.

use super::*;

#[test]
fn similarity_ignores_case_punctuation_and_spacing() {
    let archived = "It offloads networking, storage and security from the host CPU.";
    let got = "it offloads  networking,\nstorage and security from the host CPU";
    assert!((similarity(got, archived) - 1.0).abs() < 1e-9);
}

#[test]
fn similarity_tolerates_small_rewording_but_not_a_different_answer() {
    let archived = "It offloads networking, storage and security from the host CPU.";
    let close = "It offloads networking, storage, and security work from the host CPU.";
    let s = similarity(close, archived);
    assert!(s > 0.85 && s < 1.0, "{s}");
    let other = "Bananas are rich in potassium.";
    assert!(similarity(other, archived) < 0.3);
    // Extra text costs: a rambling answer is not a match.
    let rambling = format!("{archived} It also has Arm cores, and many more things besides these.");
    assert!(similarity(&rambling, archived) < 0.7);
    assert_eq!(similarity("", ""), 1.0);
    assert_eq!(similarity("", "x"), 0.0);
}

#[test]
fn error_messages_read_in_both_shapes() {
    let new = json!({"error": {"message": "no such model", "type": "NotFoundError", "code": 404}});
    assert_eq!(error_body_message(&new), "no such model (code 404)");
    let old = json!({"object": "error", "message": "bad", "code": null});
    assert_eq!(error_body_message(&old), "bad");
}

#[test]
fn urls_join_with_or_without_a_trailing_slash() {
    let mut c = ServingCheck {
        base_url: "https://vllm.lab.example/".to_owned(),
        model: "m".to_owned(),
        answers: Vec::new(),
        health_timeout: Duration::from_secs(1),
        request_timeout: Duration::from_secs(1),
        ca: None,
    };
    assert_eq!(url(&c, "health"), "https://vllm.lab.example/health");
    c.base_url = "http://127.0.0.1:8000".to_owned();
    assert_eq!(url(&c, "v1/models"), "http://127.0.0.1:8000/v1/models");
}

#[test]
fn loopback_urls_bypass_proxies() {
    for local in [
        "http://127.0.0.1:8000",
        "http://localhost/",
        "http://[::1]:8000",
    ] {
        assert!(is_loopback(local), "{local}");
    }
    for remote in [
        "https://vllm.lab.example/",
        "http://10.0.0.1:8000",
        "not a url",
    ] {
        assert!(!is_loopback(remote), "{remote}");
    }
}
