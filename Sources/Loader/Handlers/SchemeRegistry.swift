import FoundationEssentials
import Synchronization

/// An ordered list of handler classes: which handler loads a request.
///
/// ## Order
/// The most recently registered handler that accepts a request wins, so an app can override a built-in
/// (register its own `http` handler in tests) and a later plugin can override an earlier one. A session
/// asks its own registry first (its configuration's `handlerClasses` and what was registered on it),
/// then the process-wide ``default`` registry. Registering twice moves a class to the newest position.
///
/// A handler that declares ``SchemeHandler/supportedSchemes`` is asked only about those schemes, so a
/// lookup costs the same however many handlers serve other schemes.
///
/// Registering and unregistering are safe while loads run; a load that has already chosen its handler
/// keeps it.
public final class SchemeRegistry: Sendable {
    /// The process-wide registry every session falls back to. Built-in schemes are added by importing
    /// `StandardSchemes` and calling `StandardSchemes.register()`.
    public static let `default` = SchemeRegistry()

    private struct Entry {
        let type: SchemeHandler.Type
        let order: Int
    }

    private struct Table {
        var nextOrder = 0
        var byScheme: [String: [Entry]] = [:]
        var anyScheme: [Entry] = []
        var all: [Entry] = []
    }

    private let table = Locked(Table())
    private let parent: SchemeRegistry?

    /// Makes a registry.
    /// - Parameters:
    ///   - handlers: Handler classes in registration order (later ones win).
    ///   - parent: A registry to ask when none of these handlers accepts a request.
    public init(handlers: [SchemeHandler.Type] = [], parent: SchemeRegistry? = nil) {
        self.parent = parent
        for handler in handlers { register(handler) }
    }

    /// Adds `handler` as the newest (highest-priority) entry.
    public func register(_ handler: SchemeHandler.Type) {
        // Asked before the lock is taken: the handler's own code, which may look at a registry.
        let schemes = handler.supportedSchemes
        table.withLock { table in
            Self.remove(handler, from: &table)
            let entry = Entry(type: handler, order: table.nextOrder)
            table.nextOrder += 1
            table.all.append(entry)
            if schemes.isEmpty {
                table.anyScheme.append(entry)
            } else {
                for scheme in schemes { table.byScheme[scheme.lowercased(), default: []].append(entry) }
            }
        }
    }

    /// Removes `handler`; does nothing if it is not registered here.
    public func unregister(_ handler: SchemeHandler.Type) {
        table.withLock { Self.remove(handler, from: &$0) }
    }

    /// The handler classes registered here (not in the parent), oldest first.
    public var handlers: [SchemeHandler.Type] {
        table.withLock { $0.all.map(\.type) }
    }

    /// The handler class that will load `request`: the newest here that accepts it, else the parent's
    /// choice, else `nil`.
    public func handlerClass(for request: LoadRequest) -> SchemeHandler.Type? {
        let (specific, wildcard) = table.withLock { ($0.byScheme[request.scheme] ?? [], $0.anyScheme) }
        // Newest first across both lists; canInit runs outside the lock.
        var s = specific.count - 1, w = wildcard.count - 1
        while s >= 0 || w >= 0 {
            let entry: Entry
            if w < 0 || (s >= 0 && specific[s].order > wildcard[w].order) {
                entry = specific[s]; s -= 1
            } else {
                entry = wildcard[w]; w -= 1
            }
            if entry.type.canInit(with: request) { return entry.type }
        }
        return parent?.handlerClass(for: request)
    }

    private static func remove(_ handler: SchemeHandler.Type, from table: inout Table) {
        guard table.all.contains(where: { $0.type == handler }) else { return }
        table.all.removeAll { $0.type == handler }
        table.anyScheme.removeAll { $0.type == handler }
        for key in Array(table.byScheme.keys) {
            table.byScheme[key]?.removeAll { $0.type == handler }
            if table.byScheme[key]?.isEmpty == true { table.byScheme[key] = nil }
        }
    }
}
