//
// timewheel/redis/detail/cluster_slot_map.hpp
//
// The Cluster client's picture of the cluster: which master serves each of the 16384 slots,
// as learnt from CLUSTER SLOTS and corrected one slot at a time by MOVED; and the parsing of
// the CLUSTER SLOTS reply, of the redirection errors (MOVED, ASK) and of the errors that ask
// for a retry (TRYAGAIN, CLUSTERDOWN).
//

#ifndef TIMEWHEEL_REDIS_DETAIL_CLUSTER_SLOT_MAP_HPP
#define TIMEWHEEL_REDIS_DETAIL_CLUSTER_SLOT_MAP_HPP

#include <timewheel/redis/key_slot.hpp>
#include <timewheel/redis/response.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace timewheel::redis::detail {

/// A master, as CLUSTER SLOTS and the redirections name it.
struct cluster_address {
    std::string host;
    std::uint16_t port = 0;

    friend bool operator==(cluster_address const&, cluster_address const&) = default;
};

/// A run of slots and the master that serves it: one entry of CLUSTER SLOTS.
struct cluster_slot_range {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    cluster_address master;
};

/// A MOVED or ASK error reply, parsed: "MOVED 3999 127.0.0.1:6381".
struct cluster_redirection {
    enum kind_type : unsigned char { moved, ask } kind = moved;
    std::uint16_t slot = 0;
    cluster_address target; ///< host empty: the host of the node that answered
};

inline std::optional<std::uint16_t> parse_port_or_slot(std::string_view text, unsigned limit) {
    unsigned value = 0;
    auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || value >= limit)
        return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

/// Parses the text of an error reply as a redirection; nullopt when it is not one.
inline std::optional<cluster_redirection> parse_redirection(std::string_view message) {
    cluster_redirection r;
    if (message.starts_with("MOVED "))
        r.kind = cluster_redirection::moved;
    else if (message.starts_with("ASK "))
        r.kind = cluster_redirection::ask;
    else
        return std::nullopt;
    message.remove_prefix(message.find(' ') + 1);
    auto const space = message.find(' ');
    if (space == std::string_view::npos)
        return std::nullopt;
    auto const slot = parse_port_or_slot(message.substr(0, space), hash_slot_count);
    auto const endpoint = message.substr(space + 1);
    auto const colon = endpoint.rfind(':'); // IPv6 addresses have colons too
    if (!slot || colon == std::string_view::npos)
        return std::nullopt;
    auto const port = parse_port_or_slot(endpoint.substr(colon + 1), 65536);
    if (!port || *port == 0)
        return std::nullopt;
    r.slot = *slot;
    r.target.host = std::string(endpoint.substr(0, colon));
    r.target.port = *port;
    return r;
}

/// Reads a CLUSTER SLOTS reply into @p out (cleared first); false, and @p out not to be
/// used, when the reply is not a slot map: not an array of entries
/// [first, last, [host, port, ...], ...], more entries than slots, a slot out of range or
/// named twice, a port out of 1..65535, a host name over 255 bytes. An empty host or "?"
/// (a node that does not know its address) becomes @p asked_host. Defined in cluster.cpp.
bool parse_cluster_slots(reply const& r, std::string_view asked_host,
                         std::vector<cluster_slot_range>& out);

/// Whether an error reply asks the client to try the same command again later: TRYAGAIN (a
/// multi-key command during a resharding) or CLUSTERDOWN (the cluster cannot serve now).
inline bool is_retry_later(std::string_view message) noexcept {
    return message.starts_with("TRYAGAIN") || message.starts_with("CLUSTERDOWN");
}

/// Which master serves each slot, by an index into a list of nodes. The list is bounded
/// (set_limit: a MOVED or a map naming one node too many is refused, not grown) and a node
/// that serves no slot may be forgotten (forget): its index is then free and may be given to
/// another node later, so an index is only the same node while the node is live().
class cluster_slot_map {
public:
    static constexpr std::uint16_t unknown = 0xffff;
    /// The most nodes an index can name (unknown is not an index).
    static constexpr std::size_t max_limit = unknown;

    cluster_slot_map() { owners_.fill(unknown); }

    /// The most nodes known at once, live ones; at most max_limit.
    void set_limit(std::size_t limit) noexcept { limit_ = std::min(limit, max_limit); }
    std::size_t limit() const noexcept { return limit_; }

    /// Replaces the whole map with @p ranges; slots no range covers become unknown. The
    /// caller checks first that the nodes of @p ranges fit the limit (a range whose node does
    /// not fit is left unknown).
    void assign(std::span<cluster_slot_range const> ranges) {
        owners_.fill(unknown);
        for (auto const& r : ranges) {
            auto const node = node_index(r.master);
            if (node == unknown)
                continue;
            for (unsigned s = r.first; s <= r.last && s < hash_slot_count; ++s)
                owners_[s] = node;
        }
    }

    /// Records that @p slot is served by @p master (after MOVED); returns its node index, or
    /// unknown (and nothing changed) when the master is new and the list is full.
    std::uint16_t set_owner(std::uint16_t slot, cluster_address const& master) {
        auto const node = node_index(master);
        if (node != unknown)
            owners_[slot % hash_slot_count] = node;
        return node;
    }

    /// The node index that serves @p slot, or `unknown`.
    std::uint16_t owner(std::uint16_t slot) const noexcept {
        return owners_[slot % hash_slot_count];
    }

    /// The index of @p master, added to the list if new (in the first free index); unknown
    /// when it is new and limit() nodes are known already.
    std::uint16_t node_index(cluster_address const& master) {
        auto const it = std::find(nodes_.begin(), nodes_.end(), master);
        if (it != nodes_.end())
            return static_cast<std::uint16_t>(it - nodes_.begin());
        if (live_ >= limit_)
            return unknown;
        ++live_;
        auto const free = std::find_if(nodes_.begin(), nodes_.end(),
                                       [](cluster_address const& a) { return a.port == 0; });
        if (free != nodes_.end()) {
            *free = master;
            return static_cast<std::uint16_t>(free - nodes_.begin());
        }
        nodes_.push_back(master);
        return static_cast<std::uint16_t>(nodes_.size() - 1);
    }

    /// Forgets node @p node: the slots it serves become unknown and its index is free.
    void forget(std::uint16_t node) {
        if (!live(node))
            return;
        nodes_[node] = {};
        --live_;
        std::replace(owners_.begin(), owners_.end(), node, unknown);
    }

    /// Whether @p node is an index in use.
    bool live(std::uint16_t node) const noexcept {
        return node < nodes_.size() && nodes_[node].port != 0;
    }

    /// The number of nodes known now (live indices).
    std::size_t live_count() const noexcept { return live_; }

    /// The nodes, by index; a free index has port 0 and an empty host.
    std::vector<cluster_address> const& nodes() const noexcept { return nodes_; }

    /// Whether @p node serves at least one slot now.
    bool serves_any(std::uint16_t node) const noexcept {
        return std::find(owners_.begin(), owners_.end(), node) != owners_.end();
    }

    /// Whether every slot has a known master.
    bool complete() const noexcept {
        return std::find(owners_.begin(), owners_.end(), unknown) == owners_.end();
    }

private:
    std::vector<cluster_address> nodes_;
    std::array<std::uint16_t, hash_slot_count> owners_;
    std::size_t live_ = 0;
    std::size_t limit_ = max_limit;
};

} // namespace timewheel::redis::detail

#endif // TIMEWHEEL_REDIS_DETAIL_CLUSTER_SLOT_MAP_HPP
