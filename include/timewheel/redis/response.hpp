//
// timewheel/redis/response.hpp
//
// The replies to a request, stored flat: one vector of nodes (every reply and every array
// element, in pre-order) and one byte buffer holding every string. Reading is by views:
// response[i] is a redis::reply that looks into that storage without copying. A response
// given to async_exec again is cleared first and keeps its capacity, so a loop of requests
// and replies allocates nothing once warm.
//

#ifndef TIMEWHEEL_REDIS_RESPONSE_HPP
#define TIMEWHEEL_REDIS_RESPONSE_HPP

#include <timewheel/redis/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timewheel::redis {

/// The RESP2 reply types.
enum class reply_type : std::uint8_t {
    string,  ///< a bulk string ($): any bytes
    status,  ///< a simple string (+), e.g. OK or PONG
    integer, ///< an integer (:)
    nil,     ///< a nil bulk string or nil array
    array,   ///< an array (*) of replies
    error,   ///< an error reply (-); its text names the failure
};

/// Writes the name of a reply type ("string", "array"...).
inline std::ostream& operator<<(std::ostream& os, reply_type t) {
    constexpr const char* names[] = {"string", "status", "integer", "nil", "array", "error"};
    return os << names[static_cast<int>(t)];
}

namespace detail {
class reply_builder;
class connection_impl;

/// One reply or array element, as a response stores it.
struct reply_node {
    std::int64_t integer; ///< integer value, or element count of an array
    std::size_t offset;   ///< where a string's bytes start in the byte buffer
    std::size_t length;   ///< a string's length
    std::uint32_t next;   ///< index of the node after this one's subtree
    reply_type type;
};
} // namespace detail

class response;

/// A view of one reply inside a redis::response (valid while the response is unchanged).
/**
 * Typed reads throw on a mismatch: redis::server_error (with the server's text) when the
 * reply is an error, boost::system::system_error with error::nil_reply, unexpected_type or
 * index_out_of_range otherwise. Use type() or the is_... tests first to read without throws.
 */
class reply {
public:
    /// The type of the reply.
    reply_type type() const noexcept { return node().type; }

    bool is_nil() const noexcept { return type() == reply_type::nil; }
    bool is_error() const noexcept { return type() == reply_type::error; }
    bool is_array() const noexcept { return type() == reply_type::array; }
    bool is_integer() const noexcept { return type() == reply_type::integer; }
    /// True for bulk and simple strings.
    bool is_string() const noexcept {
        return type() == reply_type::string || type() == reply_type::status;
    }

    /// The integer of an integer reply.
    std::int64_t as_integer() const {
        check(reply_type::integer);
        return node().integer;
    }

    /// The bytes of a bulk string or a simple string (a view into the response).
    std::string_view as_string() const {
        if (type() != reply_type::status) {
            check(reply_type::string);
        }
        return bytes();
    }

    /// A bulk or simple string, or std::nullopt for nil (GET of a missing key).
    std::optional<std::string_view> as_optional_string() const {
        if (is_nil()) {
            return std::nullopt;
        }
        return as_string();
    }

    /// The text of an error reply ("ERR ...", "WRONGTYPE ..."); throws unexpected_type
    /// when the reply is not an error.
    std::string_view error_message() const {
        if (!is_error()) {
            throw_error(error::unexpected_type);
        }
        return bytes();
    }

    /// Throws redis::server_error when the reply is an error reply; does nothing otherwise.
    void throw_if_error() const {
        if (is_error()) {
            throw server_error(bytes());
        }
    }

    /// The number of elements of an array reply.
    std::size_t size() const {
        check(reply_type::array);
        return static_cast<std::size_t>(node().integer);
    }

    /// Element `i` of an array reply (linear in i: elements are stored in pre-order).
    reply operator[](std::size_t i) const;

    /// Every element of an array reply, in order, in one walk (a loop over operator[] is
    /// quadratic).
    std::vector<reply> elements() const;

private:
    friend class response;
    reply(const response* r, std::uint32_t index) noexcept
        : response_(r)
        , index_(index) {}
    const detail::reply_node& node() const noexcept;
    std::string_view bytes() const noexcept;
    void check(reply_type wanted) const;
    [[noreturn]] static void throw_error(error e);

    const response* response_;
    std::uint32_t index_;
};

/// The replies to one request: response[i] is the reply to its i-th command.
/**
 * A reply that is an error does not fail the request: async_exec completes with success
 * when every reply has arrived, and each reply says whether it is an error.
 */
class response {
public:
    /// One reply or array element, as stored.
    using node = detail::reply_node;

    response() = default;

    /// The number of replies (one per command of the request).
    std::size_t size() const noexcept { return roots_.size(); }
    bool empty() const noexcept { return roots_.empty(); }

    /// The reply to command `i`; throws index_out_of_range past the end.
    reply at(std::size_t i) const {
        if (i >= roots_.size()) {
            reply::throw_error(error::index_out_of_range);
        }
        return reply(this, roots_[i]);
    }
    reply operator[](std::size_t i) const { return at(i); }

    /// True when any reply is an error reply.
    bool has_error() const noexcept {
        for (auto r : roots_) {
            if (nodes_[r].type == reply_type::error) {
                return true;
            }
        }
        return false;
    }

    /// Throws redis::server_error for the first reply that is an error, if any.
    void throw_if_error() const {
        for (std::size_t i = 0; i < roots_.size(); ++i) {
            at(i).throw_if_error();
        }
    }

    /// Empties the response, keeping its capacity.
    void clear() noexcept {
        nodes_.clear();
        roots_.clear();
        data_.clear();
    }

    /// Appends a copy of `r` (with all its elements) as this response's last reply: how the
    /// Cluster client puts the replies of several masters back in the caller's order. `r`
    /// may belong to another response or to this one.
    void append(const reply& r);

    /// Every node, in pre-order (for readers that walk the tree themselves).
    const std::vector<node>& nodes() const noexcept { return nodes_; }

    /// The bytes of every string, concatenated.
    std::string_view data() const noexcept { return data_; }

private:
    friend class reply;
    friend class detail::reply_builder;
    friend class detail::connection_impl;

    std::vector<node> nodes_;
    std::vector<std::uint32_t> roots_;
    std::string data_;
};

inline const detail::reply_node& reply::node() const noexcept {
    return response_->nodes_[index_];
}

inline std::string_view reply::bytes() const noexcept {
    const auto& n = node();
    return std::string_view(response_->data_).substr(n.offset, n.length);
}

inline void reply::check(reply_type wanted) const {
    const auto t = type();
    if (t == wanted) {
        return;
    }
    if (t == reply_type::error) {
        throw server_error(bytes());
    }
    throw_error(t == reply_type::nil ? error::nil_reply : error::unexpected_type);
}

inline void reply::throw_error(error e) {
    throw boost::system::system_error(e);
}

inline void response::append(const reply& r) {
    const auto& src = *r.response_;
    const std::uint32_t root = r.index_;
    const std::uint32_t end = src.nodes_[root].next;
    const auto base = static_cast<std::uint32_t>(nodes_.size());
    roots_.push_back(base);
    for (std::uint32_t i = root; i < end; ++i) {
        node n = src.nodes_[i];
        n.next = n.next - root + base;
        if (n.type == reply_type::string || n.type == reply_type::status ||
            n.type == reply_type::error) {
            const auto at = data_.size();
            data_.append(src.data_, n.offset, n.length);
            n.offset = at;
        }
        nodes_.push_back(n);
    }
}

inline reply reply::operator[](std::size_t i) const {
    if (i >= size()) {
        throw_error(error::index_out_of_range);
    }
    std::uint32_t at = index_ + 1;
    for (; i > 0; --i) {
        at = response_->nodes_[at].next;
    }
    return reply(response_, at);
}

inline std::vector<reply> reply::elements() const {
    const std::size_t n = size();
    std::vector<reply> out;
    out.reserve(n);
    std::uint32_t at = index_ + 1;
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(reply(response_, at));
        at = response_->nodes_[at].next;
    }
    return out;
}

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_RESPONSE_HPP
