//! A body written as text answers exactly as its tree would: the pretty text of a tool
//! result, re-indented and escaped from the compact bytes in one pass, is
//! `serde_json`'s pretty text escaped as a JSON string, for any value.

use dunning_core::{Body, JsonText};
use proptest::prelude::*;
use serde_json::Value;

use super::arb_json;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn pretty_text_from_the_bytes_is_serde_jsons(v in arb_json()) {
        let mut out = Vec::new();
        JsonText::of(&v).unwrap().write_pretty_escaped(&mut out);
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let quoted = serde_json::to_string(&pretty).unwrap();
        prop_assert_eq!(String::from_utf8(out).unwrap(), &quoted[1..quoted.len() - 1]);
    }

    #[test]
    fn a_members_tree_is_the_same_from_text(v in super::arb_object()) {
        // Compared with the text parsed whole: `serde_json` parses a float to within one
        // unit of its last place, so the tree `v` itself may differ in one.
        let text = Body::Text(JsonText::of(&v).unwrap());
        let parsed = text.clone().into_value();
        if let Value::Object(m) = &v {
            for k in m.keys() {
                prop_assert_eq!(text.member(k), parsed.get(k).cloned());
            }
            prop_assert_eq!(text.member("\u{0}absent"), None);
        }
    }
}
