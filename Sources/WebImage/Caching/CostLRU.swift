/// A least-recently-used map with a cost per entry, shared by the memory tiers of both caches.
///
/// Entries live in an array of slots linked into a doubly linked list by index (most recent at the
/// head), with a dictionary from key to slot. Every operation is O(1); trimming visits only the
/// entries it removes. Slots are reused through a free list, so a warm cache allocates nothing per
/// access and there are no per-node objects for ARC to retain and release under the owner's lock.
///
/// Not thread-safe: the owner keeps it inside a `Lock`.
struct CostLRU<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        var value: Value
        var cost: Int
        var previous: Int  // toward the head (more recent); -1 at the head
        var next: Int  // toward the tail (less recent); -1 at the tail
    }

    private var slots: [Slot?] = []
    private var freeSlots: [Int] = []
    private var indexByKey: [Key: Int] = [:]
    private var head = -1
    private var tail = -1

    /// The sum of the costs of all entries.
    private(set) var totalCost = 0

    /// Number of entries.
    var count: Int { indexByKey.count }

    /// The value for `key`, marking it most recently used.
    mutating func value(forKey key: Key) -> Value? {
        guard let index = indexByKey[key], let slot = slots[index] else { return nil }
        moveToHead(index)
        return slot.value
    }

    /// The value for `key` without changing its recency.
    func peek(_ key: Key) -> Value? {
        guard let index = indexByKey[key] else { return nil }
        return slots[index]?.value
    }

    /// Inserts or replaces the value for `key` as the most recently used entry.
    mutating func setValue(_ value: Value, forKey key: Key, cost: Int) {
        let cost = max(0, cost)
        if let index = indexByKey[key], var slot = slots[index] {
            totalCost += cost - slot.cost
            slot.value = value
            slot.cost = cost
            slots[index] = slot
            moveToHead(index)
            return
        }
        let slot = Slot(key: key, value: value, cost: cost, previous: -1, next: head)
        let index: Int
        if let reused = freeSlots.popLast() {
            index = reused
            slots[index] = slot
        } else {
            index = slots.count
            slots.append(slot)
        }
        if head >= 0 { slots[head]?.previous = index }
        head = index
        if tail < 0 { tail = index }
        indexByKey[key] = index
        totalCost += cost
    }

    /// Removes the entry for `key`, returning its value.
    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let index = indexByKey[key] else { return nil }
        return remove(at: index)?.value
    }

    /// Removes every entry.
    mutating func removeAll() {
        slots.removeAll()
        freeSlots.removeAll()
        indexByKey.removeAll()
        head = -1
        tail = -1
        totalCost = 0
    }

    /// Removes least recently used entries until the total cost is at most `limit`.
    /// Returns the removed keys, least recent first.
    @discardableResult
    mutating func trim(toCost limit: Int) -> [Key] {
        var removed: [Key] = []
        while totalCost > limit, tail >= 0, let slot = remove(at: tail) {
            removed.append(slot.key)
        }
        return removed
    }

    /// The keys from most to least recently used (for tests and diagnostics; O(n)).
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var index = head
        while index >= 0, let slot = slots[index] {
            keys.append(slot.key)
            index = slot.next
        }
        return keys
    }

    private mutating func remove(at index: Int) -> Slot? {
        guard let slot = slots[index] else { return nil }
        unlink(index, slot)
        slots[index] = nil
        freeSlots.append(index)
        indexByKey[slot.key] = nil
        totalCost -= slot.cost
        if indexByKey.isEmpty {
            // Let the arrays shrink once the cache empties instead of keeping the high-water mark.
            slots.removeAll()
            freeSlots.removeAll()
        }
        return slot
    }

    private mutating func unlink(_ index: Int, _ slot: Slot) {
        if slot.previous >= 0 { slots[slot.previous]?.next = slot.next } else { head = slot.next }
        if slot.next >= 0 { slots[slot.next]?.previous = slot.previous } else { tail = slot.previous }
    }

    private mutating func moveToHead(_ index: Int) {
        guard index != head, var slot = slots[index] else { return }
        unlink(index, slot)
        slot.previous = -1
        slot.next = head
        slots[index] = slot
        if head >= 0 { slots[head]?.previous = index }
        head = index
        if tail < 0 { tail = index }
    }
}
