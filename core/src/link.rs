//! The RFC 8288 `Link` header of a REST list page: `first`, `prev`,
//! `next` and `last`, built from the page's own `meta` and the request's query, so a
//! client walks the pages without knowing the paging arguments.
//!
//! Each link is the request's public URL with `page` set and every other query
//! parameter kept as it was sent (byte for byte, so filters survive).

/// The `Link` value for a list page, or `None` when `meta` is not a page
/// (`page`, `per_page` and `total_pages` numbers).
pub(crate) fn pagination(
    base: &str,
    path: &str,
    query: Option<&str>,
    meta: &serde_json::Value,
) -> Option<String> {
    let page = meta.get("page")?.as_u64()?;
    meta.get("per_page")?.as_u64()?;
    let last = meta.get("total_pages")?.as_u64()?.max(1);
    let kept: Vec<&str> = query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some("page"))
        .collect();
    let url = |n: u64| {
        let mut q = kept.join("&");
        if !q.is_empty() {
            q.push('&');
        }
        format!("<{base}{path}?{q}page={n}>")
    };
    let mut links = vec![format!("{}; rel=\"first\"", url(1))];
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", url((page - 1).min(last))));
    }
    if page < last {
        links.push(format!("{}; rel=\"next\"", url(page + 1)));
    }
    links.push(format!("{}; rel=\"last\"", url(last)));
    Some(links.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::pagination;

    const BASE: &str = "https://api.example";

    #[test]
    fn a_middle_page_links_all_four_and_keeps_the_filters() {
        let meta = json!({"page": 2, "per_page": 10, "total": 35, "total_pages": 4});
        let link = pagination(
            BASE,
            "/v1/charges",
            Some("status=overdue&page=2&per_page=10"),
            &meta,
        )
        .unwrap();
        assert_eq!(
            link,
            "<https://api.example/v1/charges?status=overdue&per_page=10&page=1>; rel=\"first\", \
             <https://api.example/v1/charges?status=overdue&per_page=10&page=1>; rel=\"prev\", \
             <https://api.example/v1/charges?status=overdue&per_page=10&page=3>; rel=\"next\", \
             <https://api.example/v1/charges?status=overdue&per_page=10&page=4>; rel=\"last\""
        );
    }

    #[test]
    fn the_first_and_last_pages_have_no_prev_or_next() {
        let meta = json!({"page": 1, "per_page": 20, "total": 0, "total_pages": 0});
        let link = pagination(BASE, "/v1/debtors", None, &meta).unwrap();
        assert_eq!(
            link,
            "<https://api.example/v1/debtors?page=1>; rel=\"first\", \
             <https://api.example/v1/debtors?page=1>; rel=\"last\""
        );
        let meta = json!({"page": 9, "per_page": 20, "total": 30, "total_pages": 2});
        let link = pagination(BASE, "/v1/debtors", Some("page=9"), &meta).unwrap();
        assert!(link.contains("page=2>; rel=\"prev\""), "{link}");
        assert!(!link.contains("next"), "{link}");
    }

    #[test]
    fn not_a_page_no_link() {
        assert!(pagination(BASE, "/v1/x", None, &json!({"total": 3})).is_none());
        assert!(pagination(BASE, "/v1/x", None, &json!(null)).is_none());
    }
}
