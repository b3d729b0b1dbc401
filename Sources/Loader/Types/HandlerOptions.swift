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
}

/// Typed options for handlers, set on a session's configuration (for all its requests) or on one request.
/// A value set on a request wins over the session's.
public struct HandlerOptions: Sendable {
    /// Each value in a box of its key's value type. The subscript reads it back with an unchecked
    /// downcast (a key's box always holds that key's `Value`): a dynamic cast from `any Sendable` cost
    /// a conformance look-up on every HTTP request.
    private var values: [ObjectIdentifier: any AnyObject & Sendable] = [:]

    private final class Box<Value: Sendable>: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// No options set.
    public init() {}

    /// The value for `key`, or its default.
    public subscript<Key: HandlerOptionKey>(key: Key.Type) -> Key.Value {
        get {
            guard let box = values[ObjectIdentifier(key)] else { return Key.defaultValue }
            return unsafeDowncast(box, to: Box<Key.Value>.self).value
        }
        set { values[ObjectIdentifier(key)] = Box(newValue) }
    }

    /// Whether a value was set for `key`.
    public func contains<Key: HandlerOptionKey>(_ key: Key.Type) -> Bool {
        values[ObjectIdentifier(key)] != nil
    }

    /// Whether no option is set.
    var isEmpty: Bool { values.isEmpty }

    /// These options with `other`'s values added where these have none.
    public func filling(from other: HandlerOptions) -> HandlerOptions {
        // The usual cases (nothing set on the request, or nothing on the session) need no merged copy.
        if other.values.isEmpty { return self }
        if values.isEmpty { return other }
        var merged = self
        merged.values.merge(other.values) { mine, _ in mine }
        return merged
    }
}
