import Foundation

/// What the suite found: one outcome per property, with a message saying what the handler did.
public struct ConformanceReport: Sendable, CustomStringConvertible {
    /// The outcome of one property.
    public enum Outcome: Sendable, Equatable {
        /// The handler keeps the property.
        case passed
        /// The handler breaks it; the message says how.
        case failed(String)
        /// Not checked: the fixtures lack what it needs (the message says which).
        case skipped(String)
    }

    /// The handler class checked.
    public let handlerName: String
    /// Each property's outcome, in ``ConformanceProperty`` order.
    public private(set) var outcomes: [(property: ConformanceProperty, outcome: Outcome)] = []

    init(handlerName: String) {
        self.handlerName = handlerName
    }

    mutating func record(_ property: ConformanceProperty, _ outcome: Outcome) {
        if let index = outcomes.firstIndex(where: { $0.property == property }) {
            // A failure is never overwritten by a later pass of the same property.
            if case .failed = outcomes[index].outcome { return }
            outcomes[index].outcome = outcome
        } else {
            outcomes.append((property, outcome))
        }
    }

    /// The outcome of `property`.
    public func outcome(of property: ConformanceProperty) -> Outcome? {
        outcomes.first { $0.property == property }?.outcome
    }

    /// The properties that failed.
    public var failedProperties: [ConformanceProperty] {
        outcomes.compactMap { if case .failed = $0.outcome { return $0.property } else { return nil } }
    }

    /// The properties not checked, for want of a fixture.
    public var skippedProperties: [ConformanceProperty] {
        outcomes.compactMap { if case .skipped = $0.outcome { return $0.property } else { return nil } }
    }

    /// Whether no property failed. Properties not checked do not count against it: see ``allChecked`` to
    /// insist that every property was checked.
    public var allPassed: Bool { failedProperties.isEmpty }

    /// Whether every property was checked and kept: none failed, none skipped.
    public var allChecked: Bool { failedProperties.isEmpty && skippedProperties.isEmpty }

    /// A table: one line per property with its outcome and, for failures, what happened against what the
    /// contract requires.
    public var description: String {
        var lines = ["Conformance of \(handlerName):"]
        for (property, outcome) in outcomes {
            switch outcome {
            case .passed: lines.append("  PASS \(property)")
            case .skipped(let why): lines.append("  SKIP \(property): \(why)")
            case .failed(let what): lines.append("  FAIL \(property): \(what) — the contract: \(property.requirement)")
            }
        }
        let failed = failedProperties.count
        let skipped = skippedProperties.count
        lines.append("  \(outcomes.count - failed - skipped) kept, \(failed) broken, \(skipped) not checked")
        return lines.joined(separator: "\n")
    }
}
