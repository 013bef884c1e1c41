//! Behaviour tests of the codec, driven through the public API.
