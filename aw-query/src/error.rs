//! The errors a query can fail with.

use std::fmt;

/// Why a query failed. The variants and their rendering are part of the HTTP contract: the
/// server answers `500 {"message": "<Display of this error>"}` and clients show that text.
///
/// `Display` renders exactly like the reference server's debug rendering, e.g.
/// `VariableNotDefined("foo")` or `EmptyQuery`, with the detail's quotes and backslashes
/// escaped as Rust's `Debug` for strings does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The program text is not valid query2 syntax (or is nested too deeply).
    ParsingError(String),
    /// The program never set `RETURN`.
    EmptyQuery,
    /// A variable or function name that is not defined.
    VariableNotDefined(String),
    /// Operands or values of the wrong type (operators, `if` conditions, calls of
    /// non-functions, unserialisable results).
    InvalidType(String),
    /// Division by zero.
    MathError(String),
    /// Wrong number or type of arguments to a built-in function, or a malformed rule.
    InvalidFunctionParameters(String),
    /// `TIMEINTERVAL` is missing, not a string, or not a `start/end` interval.
    TimeIntervalError(String),
    /// The data source failed or has no matching bucket.
    BucketQueryError(BucketFailure),
    /// A regular expression given to a function does not compile.
    RegexCompileError(String),
    /// The query ran past its time budget (a server setting; not in the reference).
    Timeout(String),
    /// The query would hold more memory than one query may (`interpreter::MAX_QUERY_MEMORY`;
    /// not in the reference, where such a query exhausted the machine).
    MemoryLimit(String),
}

/// Why reading buckets failed: the message clients see, and the kind of storage failure
/// behind it when there is one (which the server's answer gives as its `reason`). Renders
/// as its message alone, so `BucketQueryError("…")` reads as in the reference.
#[derive(Clone, PartialEq, Eq)]
pub struct BucketFailure {
    /// The text inside `BucketQueryError("…")`.
    pub message: String,
    /// The storage failure behind it, if any.
    pub trouble: Option<crate::StorageTrouble>,
}

impl fmt::Debug for BucketFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.message, f)
    }
}

impl From<String> for BucketFailure {
    fn from(message: String) -> BucketFailure {
        BucketFailure {
            message,
            trouble: None,
        }
    }
}

impl From<&str> for BucketFailure {
    fn from(message: &str) -> BucketFailure {
        message.to_string().into()
    }
}

impl QueryError {
    /// The storage failure that made the query fail, if that is why it failed.
    pub fn storage_trouble(&self) -> Option<crate::StorageTrouble> {
        match self {
            QueryError::BucketQueryError(failure) => failure.trouble,
            _ => None,
        }
    }

    /// A failure of the data source while doing `what` (`"Failed to query bucket"`).
    pub(crate) fn from_source(what: &str, e: &crate::DataSourceError) -> QueryError {
        QueryError::BucketQueryError(BucketFailure {
            message: format!("{what}: {e:?}"),
            trouble: e.trouble(),
        })
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The derived `Debug` is exactly the reference's message format.
        write!(f, "{self:?}")
    }
}

impl std::error::Error for QueryError {}

/// Shorthand used throughout the crate.
pub(crate) type QueryResult<T> = Result<T, QueryError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_reference_debug() {
        assert_eq!(QueryError::EmptyQuery.to_string(), "EmptyQuery");
        assert_eq!(
            QueryError::VariableNotDefined("foo".into()).to_string(),
            r#"VariableNotDefined("foo")"#
        );
        assert_eq!(
            QueryError::BucketQueryError(r#"Failed to query bucket: NoSuchBucket("x")"#.into())
                .to_string(),
            r#"BucketQueryError("Failed to query bucket: NoSuchBucket(\"x\")")"#
        );
        assert_eq!(
            QueryError::ParsingError(r"a\b".into()).to_string(),
            r#"ParsingError("a\\b")"#
        );
    }
}
