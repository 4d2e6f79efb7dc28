//
// timewheel/detail/ttl_cache_node.hpp
//
// The storage of a ttl_cache: one node per entry (key, value, index hook, LRU hook and
// wheel entry in a single allocation) and a Boost.Intrusive hash index whose bucket array
// doubles when it is full.
//

#ifndef TIMEWHEEL_DETAIL_TTL_CACHE_NODE_HPP
#define TIMEWHEEL_DETAIL_TTL_CACHE_NODE_HPP

#include <timewheel/detail/mix_hash.hpp>
#include <timewheel/detail/service_entry.hpp>

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/unordered_set.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace timewheel {
namespace detail {

namespace bi = boost::intrusive;

// Whether lookups may take any key type K: with a transparent hash and key equality, as in
// the standard unordered containers.
template <typename K, typename Hash, typename KeyEqual>
concept transparent_lookup = requires {
    typename Hash::is_transparent;
    typename KeyEqual::is_transparent;
};

// The user's hash, finalized. Heterogeneous when the user's hash is.
template <typename Hash>
struct mixed_hash {
    Hash hash;

    template <typename K>
    std::size_t operator()(const K& key) const {
        return mix_hash(hash(key));
    }
};

using index_hook =
    bi::unordered_set_member_hook<bi::link_mode<bi::normal_link>, bi::store_hash<true>>;
using lru_hook = bi::list_member_hook<bi::link_mode<bi::normal_link>>;

// The part of a node that get() and set() touch, first so that it tends to share a cache
// line. Key and value live in unions: a node on the spare list keeps its hooks but holds
// neither.
template <typename Key, typename Value>
struct ttl_cache_slot {
    ttl_cache_slot() noexcept {}
    ~ttl_cache_slot() {}
    ttl_cache_slot(const ttl_cache_slot&) = delete;
    ttl_cache_slot& operator=(const ttl_cache_slot&) = delete;

    index_hook index_hook_;
    union {
        Key key_;
    };
    union {
        Value value_;
    };
    lru_hook lru_hook_; // in the LRU list while cached, in the spare list while spare
};

// One entry: the slot, the wheel entry, and the cache to report its expiry to.
template <typename Key, typename Value, typename Owner>
struct ttl_cache_node : ttl_cache_slot<Key, Value>, service_entry {
    explicit ttl_cache_node(Owner* owner) noexcept
        : service_entry(&ttl_cache_node::on_event)
        , owner_(owner) {}

    static void on_event(wheel_service&, service_entry& entry, entry_event event) {
        if (event == entry_event::expired) { // at shutdown: stay in the index, call no one
            auto& node = static_cast<ttl_cache_node&>(entry);
            node.owner_->on_expired(node);
        }
    }

    Owner* owner_;
};

// Key of a slot or a flight, for the index.
template <typename Key>
struct key_of {
    using type = Key;
    template <typename T>
    const Key& operator()(const T& item) const noexcept {
        return item.key_;
    }
};

// A hash index over intrusive items. It owns only its bucket array, which starts inside
// the object (no allocation for a small cache) and doubles whenever the items would
// outnumber the buckets, so that lookups visit about one item.
template <typename T, typename Key, index_hook T::*Member, typename Hash, typename KeyEqual,
          typename Allocator>
class ttl_cache_index {
public:
    using set_type =
        bi::unordered_set<T, bi::member_hook<T, index_hook, Member>, bi::key_of_value<key_of<Key>>,
                          bi::hash<mixed_hash<Hash>>, bi::equal<KeyEqual>,
                          bi::power_2_buckets<true>, bi::store_hash<true>, bi::compare_hash<true>,
                          bi::constant_time_size<true>, bi::size_type<std::size_t>>;
    using bucket_type = typename set_type::bucket_type;
    using bucket_traits = typename set_type::bucket_traits;

    ttl_cache_index(const Hash& hash, const KeyEqual& equal, const Allocator& allocator)
        : buckets_(allocator)
        , set_(bucket_traits(buckets_.initial, initial_count), mixed_hash<Hash>{hash}, equal) {}

    ttl_cache_index(const ttl_cache_index&) = delete;
    ttl_cache_index& operator=(const ttl_cache_index&) = delete;

    set_type& set() noexcept { return set_; }
    const set_type& set() const noexcept { return set_; }

    // Whether one more item would outnumber the buckets.
    bool full() const noexcept { return set_.size() >= buckets_.count; }

    // Doubles the bucket array: O(size), one allocation. Strong guarantee.
    void grow() {
        const std::size_t count = buckets_.count * 2;
        bucket_type* buckets = traits::allocate(buckets_.allocator, count);
        std::uninitialized_default_construct_n(buckets, count);
        set_.rehash(bucket_traits(buckets, count)); // stored hashes: no user code runs
        buckets_.release();
        buckets_.array = buckets;
        buckets_.count = count;
    }

    std::size_t bucket_count() const noexcept { return buckets_.count; }

private:
    static constexpr std::size_t initial_count = 8;
    using bucket_allocator =
        typename std::allocator_traits<Allocator>::template rebind_alloc<bucket_type>;
    using traits = std::allocator_traits<bucket_allocator>;

    // Destroyed after the set, which still reads its buckets when it goes.
    struct bucket_array {
        explicit bucket_array(const Allocator& a)
            : allocator(a) {}
        ~bucket_array() { release(); }
        bucket_array(const bucket_array&) = delete;
        bucket_array& operator=(const bucket_array&) = delete;

        void release() noexcept {
            if (array != initial) {
                std::destroy_n(array, count);
                traits::deallocate(allocator, array, count);
            }
        }

        bucket_allocator allocator;
        bucket_type initial[initial_count];
        bucket_type* array = initial;
        std::size_t count = initial_count;
    };

    bucket_array buckets_;
    set_type set_; // normal_link hooks: its destructor forgets the items, touching none
};

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_TTL_CACHE_NODE_HPP
