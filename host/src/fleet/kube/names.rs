//! Kubernetes' naming rules (apimachinery's `validation` package), checked here so a bad
//! label or node name is refused with a sentence naming it instead of being sent and
//! coming back as a 422 for the whole patch. Each function returns the broken rule.

/// Longest label value, and longest name part of a label key.
const MAX_NAME: usize = 63;
/// Longest DNS subdomain: a label key's prefix, a node name.
const MAX_SUBDOMAIN: usize = 253;
/// Longest condition reason (metav1.Condition's limit).
const MAX_REASON: usize = 1024;

/// A label value: empty, or at most 63 characters of `[A-Za-z0-9._-]` that begin and end
/// alphanumeric.
pub(super) fn label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    name_part(value, "value")
}

/// A label key: `[prefix/]name`, the name as [`label_value`] (but not empty), the prefix a
/// DNS subdomain. Prefixes of Kubernetes itself (`kubernetes.io`, `k8s.io` and their
/// subdomains) are refused: their labels belong to the kubelet and controllers, and
/// dpuctl must never overwrite, say, `kubernetes.io/hostname`.
pub(super) fn label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if name.is_empty() {
        return Err("the name after the prefix is empty".to_owned());
    }
    name_part(name, "name")?;
    if let Some(prefix) = prefix {
        dns_subdomain(prefix).map_err(|problem| format!("prefix {prefix:?}: {problem}"))?;
        let reserved = ["kubernetes.io", "k8s.io"]
            .iter()
            .any(|r| prefix == *r || prefix.ends_with(&format!(".{r}")));
        if reserved {
            return Err(format!(
                "prefix {prefix:?} is reserved for Kubernetes components"
            ));
        }
    }
    Ok(())
}

/// A DNS-1123 subdomain: at most 253 characters, dot-separated labels of lowercase
/// alphanumerics and `-` that begin and end alphanumeric. Node names are these.
pub(super) fn dns_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("empty".to_owned());
    }
    if name.len() > MAX_SUBDOMAIN {
        return Err(format!(
            "{} characters, at most {MAX_SUBDOMAIN}",
            name.len()
        ));
    }
    for part in name.split('.') {
        dns_label(part).map_err(|problem| format!("{problem} (in {part:?})"))?;
    }
    Ok(())
}

/// A DNS-1123 label: at most 63 lowercase alphanumerics and `-`, beginning and ending
/// alphanumeric. Namespaces are these.
pub(super) fn dns_label(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("empty".to_owned());
    }
    if name.len() > MAX_NAME {
        return Err(format!("{} characters, at most {MAX_NAME}", name.len()));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "{bad:?} is not allowed: lowercase letters, digits and '-' only"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must begin and end with a letter or digit".to_owned());
    }
    Ok(())
}

/// A condition type: a label key's shape (`[prefix/]Name`), and none of the kubelet's own
/// (`Ready`, the pressure conditions, `NetworkUnavailable`), which the kubelet rewrites
/// and the scheduler reads: dpuctl writing them would fight the kubelet.
pub(super) fn condition_type(kind: &str) -> Result<(), String> {
    const KUBELET: [&str; 5] = [
        "Ready",
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "NetworkUnavailable",
    ];
    if KUBELET.contains(&kind) {
        return Err("is the kubelet's own condition".to_owned());
    }
    let (prefix, name) = match kind.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, kind),
    };
    if let Some(prefix) = prefix {
        dns_subdomain(prefix).map_err(|problem| format!("prefix {prefix:?}: {problem}"))?;
    }
    if name.is_empty() {
        return Err("empty".to_owned());
    }
    name_part(name, "name")
}

/// A condition reason: CamelCase, `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`, at most 1024
/// characters (metav1.Condition's rule; tools such as `kubectl wait` match on it).
pub(super) fn condition_reason(reason: &str) -> Result<(), String> {
    if reason.is_empty() {
        return Err("empty".to_owned());
    }
    if reason.len() > MAX_REASON {
        return Err(format!("{} characters, at most {MAX_REASON}", reason.len()));
    }
    if !reason.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err("must begin with a letter (CamelCase)".to_owned());
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | ',' | ':');
    if let Some(bad) = reason.chars().find(|c| !allowed(*c)) {
        return Err(format!(
            "{bad:?} is not allowed: letters, digits, '_', ',' and ':' only (CamelCase)"
        ));
    }
    if reason.ends_with([',', ':']) {
        return Err("must end with a letter, digit or '_'".to_owned());
    }
    Ok(())
}

/// The name part of a label key, or a label value: at most 63 of `[A-Za-z0-9._-]`,
/// beginning and ending alphanumeric.
fn name_part(text: &str, what: &str) -> Result<(), String> {
    if text.len() > MAX_NAME {
        return Err(format!(
            "{what} has {} characters, at most {MAX_NAME}",
            text.len()
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if let Some(bad) = text.chars().find(|c| !allowed(*c)) {
        return Err(format!(
            "{bad:?} is not allowed in a {what}: letters, digits, '-', '_' and '.' only"
        ));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(text.chars().next()) || !alnum(text.chars().last()) {
        return Err(format!(
            "a {what} must begin and end with a letter or digit"
        ));
    }
    Ok(())
}
