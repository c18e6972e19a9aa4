use super::*;

#[test]
fn accept_picks_openmetrics_only_when_asked() {
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(Format::from_accept(Some(prometheus)), Format::OpenMetrics);
    assert_eq!(Format::from_accept(Some("*/*")), Format::Text);
    assert_eq!(Format::from_accept(None), Format::Text);
}

mod recycle;
