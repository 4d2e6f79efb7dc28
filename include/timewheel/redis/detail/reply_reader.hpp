//
// timewheel/redis/detail/reply_reader.hpp
//
// Bytes from a Redis server in, replies out: hiredis's RESP reader, with functions that build
// each reply straight into a redis::response (no redisReply trees). The connection feeds it
// what its socket reads; the fuzzer of fuzz/redis_reply.cpp feeds it arbitrary bytes. Its own
// header so that both reach the same code.
//

#ifndef TIMEWHEEL_REDIS_DETAIL_REPLY_READER_HPP
#define TIMEWHEEL_REDIS_DETAIL_REPLY_READER_HPP

#include <timewheel/redis/response.hpp>

#include <cstddef>
#include <memory>

struct redisReader;

namespace timewheel::redis::detail {

class reply_builder;

class reply_reader {
public:
    /// Gives the response the next reply is built into (null: parse it and drop it); called
    /// when the first byte of a reply is parsed, with `owner`.
    using sink_fn = response* (*)(void* owner);

    /// `max_reply_bytes`: what one reply may cost (redis::config::max_reply_bytes); past it,
    /// feed() or next() report the reader in error. @throws std::bad_alloc
    reply_reader(sink_fn next_sink, void* owner, std::size_t max_reply_bytes);
    ~reply_reader();
    reply_reader(const reply_reader&) = delete;
    reply_reader& operator=(const reply_reader&) = delete;

    /// Starts afresh (a new connection): bytes fed before are dropped. @throws std::bad_alloc
    void reset();

    /// Appends bytes read. False: the reader is in error (a protocol error seen before), or
    /// more than max_reply_bytes wait unparsed (a bulk string or an array that would be
    /// larger than a reply may be).
    bool feed(const char* data, std::size_t n);

    enum class result { reply, incomplete, protocol_error };
    /// Parses the next complete reply into its sink. After protocol_error the reader stays
    /// in error until reset().
    result next();

    /// Whether part of a reply has been parsed (its sink chosen) but not all of it.
    bool in_reply() const noexcept;
    /// The rest of the reply being parsed goes nowhere (its request was cancelled).
    void drop_current() noexcept;
    /// Forgets the reply being parsed (the connection failed; reset() follows).
    void forget() noexcept;

private:
    redisReader* reader_ = nullptr;
    std::unique_ptr<reply_builder> builder_;
    std::size_t max_bytes_;
};

} // namespace timewheel::redis::detail

#endif // TIMEWHEEL_REDIS_DETAIL_REPLY_READER_HPP
