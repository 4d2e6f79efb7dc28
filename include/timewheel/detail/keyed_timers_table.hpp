//
// timewheel/detail/keyed_timers_table.hpp
//
// The storage of a keyed_timers: an open-addressing hash table whose slots are the nodes
// themselves (a service entry, the hash, a back pointer, the key and the value).
//
// Why this shape: with millions of keys each operation on a random key misses the cache,
// and as every set or move reads the clock (whose fence stops the processor from overlapping
// one operation's misses with the next one's), each miss is paid in full. A chained table
// pays two (bucket, then node); slots that hold the nodes pay one. A slot keeps its key and
// value in unions, constructed only while it is full, so emptied slots keep their memory and
// steady churn allocates nothing; the array grows (doubling, never shrinking) only when the
// number of keys reaches a new peak. Arrays of 2 MiB or more are 2 MiB-aligned and, on Linux,
// advised for transparent huge pages, which spares the TLB misses.
//

#ifndef TIMEWHEEL_DETAIL_KEYED_TIMERS_TABLE_HPP
#define TIMEWHEEL_DETAIL_KEYED_TIMERS_TABLE_HPP

#include <timewheel/detail/mix_hash.hpp>
#include <timewheel/detail/service_entry.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace timewheel {
namespace detail {

// Raw memory for slot arrays: large blocks are aligned for huge pages.
inline constexpr std::size_t huge_page_size = std::size_t{2} << 20;

// Blocks of huge_page_size or more are aligned to it; smaller ones to @c alignment.
inline std::size_t block_alignment(std::size_t bytes, std::size_t alignment) noexcept {
    return bytes >= huge_page_size ? std::max(alignment, huge_page_size) : alignment;
}

inline void* allocate_block(std::size_t bytes, std::size_t alignment) {
    alignment = block_alignment(bytes, alignment);
    if (alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
        return ::operator new(bytes);
    }
    void* block = ::operator new (bytes, std::align_val_t{alignment});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= huge_page_size) {
        ::madvise(block, bytes, MADV_HUGEPAGE); // advice only: failure changes nothing
    }
#endif
    return block;
}

inline void deallocate_block(void* block, std::size_t bytes, std::size_t alignment) noexcept {
    alignment = block_alignment(bytes, alignment);
    if (alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
        ::operator delete(block);
    } else {
        ::operator delete (block, std::align_val_t{alignment});
    }
}

// A block size for about @c bytes: huge blocks are rounded up to whole huge pages.
inline std::size_t block_size(std::size_t bytes) noexcept {
    return bytes < huge_page_size ? bytes
                                  : (bytes + huge_page_size - 1) / huge_page_size * huge_page_size;
}

template <typename Key, typename Value>
class keyed_timers_slot : public service_entry {
public:
    keyed_timers_slot(event_function on_event, void* owner) noexcept
        : service_entry(on_event)
        , owner_(owner) {}

    // The key and value are destroyed by the owner (they are live only while full).
    ~keyed_timers_slot() {}

    keyed_timers_slot(const keyed_timers_slot&) = delete;
    keyed_timers_slot& operator=(const keyed_timers_slot&) = delete;

    // Moves a full slot into this empty one: its place in the wheel, key, value and hash.
    void take(keyed_timers_slot& from) noexcept {
        static_cast<service_entry&>(*this) = std::move(static_cast<service_entry&>(from));
        ::new (static_cast<void*>(std::addressof(key_))) Key(std::move(from.key_));
        ::new (static_cast<void*>(std::addressof(value_))) Value(std::move(from.value_));
        from.key_.~Key();
        from.value_.~Value();
        hash_ = from.hash_;
        from.hash_ = 0;
    }

    std::uint64_t hash_ = 0; // 0: empty; else full_bit, maybe drain_bit, and the mixed hash
    void* owner_;
    union {
        Key key_;
    };
    union {
        Value value_;
    };
};

// An open-addressing table whose slots are the nodes themselves: linear probing over a
// power-of-two array, at most 3/4 full, with backward-shift deletion (no tombstones). A
// lookup touches the home slot and its neighbours, usually one or two adjacent cache lines,
// where a chained table would miss on the bucket array and then on the node. Slots move only
// when the array grows (all of them) and when a removal shifts the rest of its cluster back;
// a moved slot takes its place in the wheel with it (wheel_entry's move).
template <typename Slot>
class slot_table {
public:
    static constexpr std::uint64_t full_bit = std::uint64_t{1} << 63;
    // Marks the slots a drain still has to visit: they no longer match any lookup.
    static constexpr std::uint64_t drain_bit = std::uint64_t{1} << 62;
    static constexpr std::size_t initial_capacity = 16;

    slot_table(typename Slot::event_function on_event, void* owner)
        : on_event_(on_event)
        , owner_(owner)
        , slots_(allocate(initial_capacity))
        , mask_(initial_capacity - 1) {}

    // The owner has emptied the table.
    ~slot_table() { release(slots_, capacity()); }

    slot_table(const slot_table&) = delete;
    slot_table& operator=(const slot_table&) = delete;

    static std::uint64_t stored_hash(std::size_t mixed) noexcept {
        return (static_cast<std::uint64_t>(mixed) & ~(full_bit | drain_bit)) | full_bit;
    }

    std::size_t size() const noexcept { return size_; }         // full, not draining
    std::size_t occupied() const noexcept { return occupied_; } // full, draining included
    std::size_t capacity() const noexcept { return mask_ + 1; }
    std::size_t index_of(const Slot& slot) const noexcept {
        return static_cast<std::size_t>(&slot - slots_);
    }

    template <typename K, typename Equal>
    Slot* find(const K& key, std::uint64_t hash, const Equal& equal) const {
        for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
            Slot& slot = slots_[i];
            if (slot.hash_ == hash && equal(slot.key_, key)) {
                return &slot;
            }
            if (slot.hash_ == 0) {
                return nullptr;
            }
        }
    }

    // Makes room for @c count occupied slots; may move every slot to a new array. Throws
    // (changing nothing) if it cannot allocate.
    void reserve(std::size_t count) {
        std::size_t capacity = this->capacity();
        while (count > capacity / 4 * 3) {
            capacity *= 2;
        }
        if (capacity != this->capacity()) {
            grow(capacity);
        }
    }

    // Fills the first empty slot from @c hash's home; reserve(occupied() + 1) first. The key
    // and value are then constructed by the caller (or the slot is given back with vacate).
    Slot* occupy(std::uint64_t hash) noexcept {
        std::size_t i = hash & mask_;
        while (slots_[i].hash_ != 0) {
            i = (i + 1) & mask_;
        }
        slots_[i].hash_ = hash;
        ++size_;
        ++occupied_;
        return &slots_[i];
    }

    // Empties @c slot, whose key and value are already destroyed, and shifts the rest of its
    // cluster back so that no lookup stops short of its key (Knuth's algorithm R).
    void vacate(Slot* slot) noexcept {
        if ((slot->hash_ & drain_bit) == 0) {
            --size_;
        }
        --occupied_;
        std::size_t hole = index_of(*slot);
        slot->hash_ = 0;
        for (std::size_t i = (hole + 1) & mask_; slots_[i].hash_ != 0; i = (i + 1) & mask_) {
            const std::size_t home = slots_[i].hash_ & mask_;
            // Move it unless its home lies cyclically in (hole, i]: it may not pass its home.
            const bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
            if (!stays) {
                slots_[hole].take(slots_[i]);
                hole = i;
            }
        }
    }

    // Marks every full slot for draining; returns how many. size() becomes 0.
    template <typename Function>
    std::size_t mark_for_drain(Function&& visit) {
        std::size_t marked = 0;
        for (std::size_t i = 0; i <= mask_ && marked < size_; ++i) {
            if (slots_[i].hash_ != 0 && (slots_[i].hash_ & drain_bit) == 0) {
                visit(slots_[i]);
                slots_[i].hash_ |= drain_bit;
                ++marked;
            }
        }
        size_ = 0;
        return marked;
    }

    // The first slot marked for draining at or after @c from, or nullptr.
    Slot* next_marked(std::size_t from) noexcept {
        for (std::size_t i = from; i <= mask_; ++i) {
            if ((slots_[i].hash_ & drain_bit) != 0) {
                return &slots_[i];
            }
        }
        return nullptr;
    }

    // Calls @c destroy on every slot still marked for draining and empties it.
    template <typename Function>
    void clear_marked(Function&& destroy) noexcept {
        for (std::size_t i = 0; i <= mask_; ++i) {
            while ((slots_[i].hash_ & drain_bit) != 0) { // a shifted one may take its place
                destroy(slots_[i]);
                vacate(&slots_[i]);
            }
        }
    }

    // Calls @c destroy on every full slot (draining included), then empties the table.
    template <typename Function>
    void clear(Function&& destroy) noexcept {
        for (std::size_t i = 0; i <= mask_ && occupied_ != 0; ++i) {
            if (slots_[i].hash_ != 0) {
                destroy(slots_[i]);
                slots_[i].hash_ = 0;
                --occupied_;
            }
        }
        size_ = 0;
    }

private:
    Slot* allocate(std::size_t count) {
        Slot* slots =
            static_cast<Slot*>(allocate_block(block_size(count * sizeof(Slot)), alignof(Slot)));
        for (std::size_t i = 0; i < count; ++i) {
            ::new (static_cast<void*>(slots + i)) Slot(on_event_, owner_);
        }
        return slots;
    }

    static void release(Slot* slots, std::size_t count) noexcept {
        std::destroy_n(slots, count);
        deallocate_block(slots, block_size(count * sizeof(Slot)), alignof(Slot));
    }

    void grow(std::size_t capacity) {
        Slot* fresh = allocate(capacity);
        const std::size_t mask = capacity - 1;
        for (std::size_t i = 0; i <= mask_; ++i) {
            if (slots_[i].hash_ != 0) {
                std::size_t j = slots_[i].hash_ & mask;
                while (fresh[j].hash_ != 0) {
                    j = (j + 1) & mask;
                }
                fresh[j].take(slots_[i]);
            }
        }
        release(slots_, this->capacity());
        slots_ = fresh;
        mask_ = mask;
    }

    typename Slot::event_function on_event_;
    void* owner_;
    Slot* slots_;
    std::size_t mask_;
    std::size_t size_ = 0;
    std::size_t occupied_ = 0;
};

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_KEYED_TIMERS_TABLE_HPP
