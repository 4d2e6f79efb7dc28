//
// timewheel/redis/detail/cluster_reply_copy.hpp
//
// Copies one reply (with its elements) from a response to the end of another: how the
// Cluster client puts the replies of several masters back in the caller's order.
//
// A response can only be written by the connection's reply builder, and has no public way to
// append a copied reply yet. Until it has one (a `response::append(reply)` was asked for),
// this reaches its three private members through the explicit-instantiation rule (access is
// not checked on the template arguments of an explicit instantiation, [temp.spec]/6), in this
// one place only.
//

#ifndef TIMEWHEEL_REDIS_DETAIL_CLUSTER_REPLY_COPY_HPP
#define TIMEWHEEL_REDIS_DETAIL_CLUSTER_REPLY_COPY_HPP

#include <timewheel/redis/response.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace timewheel::redis::detail {

template <typename Tag, typename Tag::type Member>
struct cluster_response_access {
    friend typename Tag::type access(Tag) { return Member; }
};

struct cluster_response_nodes {
    using type = std::vector<reply_node> response::*;
    friend type access(cluster_response_nodes);
};
struct cluster_response_roots {
    using type = std::vector<std::uint32_t> response::*;
    friend type access(cluster_response_roots);
};
struct cluster_response_data {
    using type = std::string response::*;
    friend type access(cluster_response_data);
};

template struct cluster_response_access<cluster_response_nodes, &response::nodes_>;
template struct cluster_response_access<cluster_response_roots, &response::roots_>;
template struct cluster_response_access<cluster_response_data, &response::data_>;

/// Appends a copy of reply @p index of @p src (and all its elements) to @p dst.
inline void append_reply_copy(response& dst, response const& src, std::size_t index) {
    auto const& src_nodes = src.*access(cluster_response_nodes{});
    auto const& src_roots = src.*access(cluster_response_roots{});
    auto const& src_data = src.*access(cluster_response_data{});
    auto& nodes = dst.*access(cluster_response_nodes{});
    auto& roots = dst.*access(cluster_response_roots{});
    auto& data = dst.*access(cluster_response_data{});

    std::uint32_t const root = src_roots.at(index);
    std::uint32_t const end = src_nodes[root].next;
    auto const base = static_cast<std::uint32_t>(nodes.size());
    roots.push_back(base);
    for (std::uint32_t i = root; i < end; ++i) {
        reply_node n = src_nodes[i];
        n.next = n.next - root + base;
        if (n.type == reply_type::string || n.type == reply_type::status ||
            n.type == reply_type::error) {
            auto const at = data.size();
            data.append(src_data, n.offset, n.length);
            n.offset = at;
        }
        nodes.push_back(n);
    }
}

} // namespace timewheel::redis::detail

#endif // TIMEWHEEL_REDIS_DETAIL_CLUSTER_REPLY_COPY_HPP
