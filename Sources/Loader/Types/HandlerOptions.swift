/// A key for a typed option a handler reads from its request, such as the HTTP handler's pool and TLS
/// settings. The key's type names the option; ``defaultValue`` applies when nobody set it.
///
/// ```swift
/// enum Greeting: HandlerOptionKey { static let defaultValue = "hello" }
/// configuration.handlerOptions[Greeting.self] = "bonjour"      // every request of the session
/// request.options[Greeting.self]                               // "bonjour", read by the handler
/// ```
public protocol HandlerOptionKey {
    /// The option's type.
    associatedtype Value: Sendable
    /// The value when none was set.
    static var defaultValue: Value { get }
    /// The value a request gets when it set `requestValue` and its session set `sessionValue`. By default
    /// the request's, whole; a key whose value holds several settings can keep the session's settings
    /// that the request left alone (``HandlerOptions`` calls it only when both set a value).
    static func merged(_ requestValue: Value, over sessionValue: Value) -> Value
}

extension HandlerOptionKey {
    /// The request's value, whole.
    public static func merged(_ requestValue: Value, over sessionValue: Value) -> Value { requestValue }
}

/// Typed options for handlers, set on a session's configuration (for all its requests) or on one request.
/// A value set on a request wins over the session's, as its key's ``HandlerOptionKey/merged(_:over:)``
/// says: whole, unless the key keeps the session's settings that the request left alone.
public struct HandlerOptions: Sendable {
    /// Each value in a box of its key. The subscript reads it back with an unchecked downcast (a key's box
    /// always is that key's): a dynamic cast from `any Sendable` cost a conformance look-up on every HTTP
    /// request.
    private var values: [ObjectIdentifier: AnyBox] = [:]

    /// A value whose key is out of sight, which can still merge itself over a session's value of its key.
    private class AnyBox: @unchecked Sendable {
        // @unchecked: immutable; the one subclass holds a `Sendable` value.
        func merged(over session: AnyBox) -> AnyBox { self }
    }

    private final class Box<Key: HandlerOptionKey>: AnyBox, @unchecked Sendable {
        let value: Key.Value
        init(_ value: Key.Value) { self.value = value }

        override func merged(over session: AnyBox) -> AnyBox {
            Box(Key.merged(value, over: unsafeDowncast(session, to: Box<Key>.self).value))
        }
    }

    /// No options set.
    public init() {}

    /// The value for `key`, or its default.
    public subscript<Key: HandlerOptionKey>(key: Key.Type) -> Key.Value {
        get {
            guard let box = values[ObjectIdentifier(key)] else { return Key.defaultValue }
            return unsafeDowncast(box, to: Box<Key>.self).value
        }
        set { values[ObjectIdentifier(key)] = Box<Key>(newValue) }
    }

    /// Whether a value was set for `key`.
    public func contains<Key: HandlerOptionKey>(_ key: Key.Type) -> Bool {
        values[ObjectIdentifier(key)] != nil
    }

    /// Whether no option is set.
    var isEmpty: Bool { values.isEmpty }

    /// These options (a request's) over `other`'s (its session's): `other`'s values added where these have
    /// none, and where both have one, the two merged as their key says.
    public func filling(from other: HandlerOptions) -> HandlerOptions {
        // The usual cases (nothing set on the request, or nothing on the session) need no merged copy.
        if other.values.isEmpty { return self }
        if values.isEmpty { return other }
        var merged = self
        merged.values.merge(other.values) { mine, session in mine.merged(over: session) }
        return merged
    }
}
