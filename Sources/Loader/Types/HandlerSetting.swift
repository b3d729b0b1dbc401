/// One setting of a handler's options that remembers whether it was set, so that a request's options can
/// change only what the request set (see ``HandlerOptionKey/merged(_:over:)``).
///
/// ```swift
/// struct GreeterOptions: HandlerOptionKey, Hashable, Sendable {
///     static var defaultValue: GreeterOptions { GreeterOptions() }
///     @HandlerSetting var greeting = "hello"
///     @HandlerSetting var timeout: Double = 30
///     static func merged(_ request: Self, over session: Self) -> Self {
///         var merged = request
///         merged.$greeting = request.$greeting.over(session.$greeting)
///         merged.$timeout = request.$timeout.over(session.$timeout)
///         return merged
///     }
/// }
/// ```
///
/// Two settings are equal when they read the same, whether set or left at the default.
@propertyWrapper
public struct HandlerSetting<Value: Hashable & Sendable>: Hashable, Sendable {
    private var chosen: Value?
    private let standard: Value

    /// A setting whose default is `wrappedValue`, not set yet.
    public init(wrappedValue: Value) {
        standard = wrappedValue
    }

    /// The value set, or the default.
    public var wrappedValue: Value {
        get { chosen ?? standard }
        set { chosen = newValue }
    }

    /// The setting itself (`$name`), for ``over(_:)`` and ``isSet``, from any file.
    public var projectedValue: HandlerSetting {
        get { self }
        set { self = newValue }
    }

    /// Whether a value was set, even one equal to the default.
    public var isSet: Bool { chosen != nil }

    /// This setting if it was set, else `base`: a request's setting over its session's.
    public func over(_ base: HandlerSetting) -> HandlerSetting {
        isSet ? self : base
    }

    /// Whether the two read the same.
    public static func == (lhs: HandlerSetting, rhs: HandlerSetting) -> Bool {
        lhs.wrappedValue == rhs.wrappedValue
    }

    /// Hashes the value as it reads.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(wrappedValue)
    }
}
