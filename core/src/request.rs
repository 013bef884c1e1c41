//! The parsed HTTP request the core consumes, borrowed from the codec's buffers.

/// One header field as received (name as sent, value as raw bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// Field name; compared case-insensitively.
    pub name: &'a str,
    /// Field value; not trimmed, may hold any byte the codec let through.
    pub value: &'a [u8],
}

/// An HTTP request whose framing the codec has already checked (step 1 of the processing order).
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// Request method, e.g. `POST`.
    pub method: &'a str,
    /// Request target as sent (origin form: path plus optional query).
    pub target: &'a str,
    /// Every header field, in order of arrival.
    pub headers: &'a [Header<'a>],
    /// The complete (de-chunked) body.
    pub body: &'a [u8],
}

impl<'a> Request<'a> {
    /// Every value of the header `name`, compared case-insensitively, in order.
    pub fn header_values(&self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// The single value of header `name`: `Ok(None)` when absent, `Err(())` when repeated.
    #[allow(clippy::result_unit_err)]
    pub fn single_header(&self, name: &'a str) -> Result<Option<&'a [u8]>, ()> {
        let mut values = self.header_values(name);
        let first = values.next();
        if values.next().is_some() {
            return Err(());
        }
        Ok(first)
    }

    /// The path part of the target (before `?`).
    pub fn path(&self) -> &'a str {
        self.target.split_once('?').map_or(self.target, |(p, _)| p)
    }

    /// The query part of the target (after `?`), if any.
    pub fn query(&self) -> Option<&'a str> {
        self.target.split_once('?').map(|(_, q)| q)
    }
}
