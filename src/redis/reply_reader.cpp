//
// src/redis/reply_reader.cpp
//
#include <timewheel/redis/detail/reply_reader.hpp>

#include <hiredis/read.h>

#include <array>
#include <cstdint>
#include <new>

namespace timewheel::redis::detail {

// Builds hiredis's parse results directly into a response (no redisReply trees): nodes in
// pre-order, strings appended to the response's byte buffer. A null sink parses and drops.
class reply_builder {
public:
    reply_builder(reply_reader::sink_fn next_sink, void* owner, std::size_t max_bytes) noexcept
        : next_sink_(next_sink)
        , owner_(owner)
        , max_bytes_(max_bytes) {}

    static redisReplyObjectFunctions functions;

    void reset() noexcept {
        in_reply_ = false;
        sink_ = nullptr;
        depth_ = 0;
    }

    bool in_reply_ = false;
    response* sink_ = nullptr;

private:
    static reply_builder& of(const redisReadTask* t) noexcept {
        return *static_cast<reply_builder*>(t->privdata);
    }

    static void* on_string(const redisReadTask* t, char* s, size_t len) {
        reply_type type = reply_type::string;
        if (t->type == REDIS_REPLY_STATUS) {
            type = reply_type::status;
        } else if (t->type == REDIS_REPLY_ERROR) {
            type = reply_type::error;
        }
        return of(t).add(type, 0, s, len, false);
    }
    static void* on_array(const redisReadTask* t, int elements) {
        // A nil array (-1) comes as nil; a count below that is refused by the hiredis
        // versions we know, and refused here whatever the version: read as a size_t, an
        // array of -5 elements would be one of 2^64-5.
        if (elements < 0) {
            return nullptr;
        }
        return of(t).add(reply_type::array, elements, nullptr, 0, elements > 0);
    }
    static void* on_integer(const redisReadTask* t, long long value) {
        return of(t).add(reply_type::integer, value, nullptr, 0, false);
    }
    static void* on_nil(const redisReadTask* t) {
        return of(t).add(reply_type::nil, 0, nullptr, 0, false);
    }
    static void on_free(void*) {}

    void* add(reply_type type, std::int64_t integer, const char* s, std::size_t len, bool opens) {
        if (!in_reply_) {
            in_reply_ = true;
            depth_ = 0;
            bytes_ = 0;
            sink_ = next_sink_(owner_);
        }
        // A reply of many small elements costs memory that no single bulk string shows:
        // past the budget, hiredis takes the null as an error and the reply fails.
        bytes_ += len + element_cost;
        if (bytes_ > max_bytes_) {
            return nullptr;
        }
        // hiredis 0.14 refuses arrays nested deeper than 7, but hiredis 1.x grows its task
        // stack without end (Conan may pick either): past our own stack, the reply fails.
        if (opens && depth_ == stack_.size()) {
            return nullptr;
        }
        std::uint32_t index = 0;
        if (sink_) {
            auto& nodes = sink_->nodes_;
            index = static_cast<std::uint32_t>(nodes.size());
            if (depth_ == 0) {
                sink_->roots_.push_back(index);
            }
            nodes.push_back({integer, sink_->data_.size(), len, index + 1, type});
            if (len > 0) {
                sink_->data_.append(s, len);
            }
        }
        if (opens) {
            stack_[depth_++] = {index, integer};
            return this;
        }
        // A complete value: close every array it completes.
        while (depth_ > 0) {
            auto& f = stack_[depth_ - 1];
            if (--f.remaining > 0) {
                break;
            }
            if (sink_) {
                sink_->nodes_[f.index].next = static_cast<std::uint32_t>(sink_->nodes_.size());
            }
            --depth_;
        }
        return this;
    }

    struct frame {
        std::uint32_t index;
        std::int64_t remaining;
    };
    // What an element costs a response besides its bytes (its node), rounded up.
    static constexpr std::size_t element_cost = 32;

    reply_reader::sink_fn next_sink_;
    void* owner_;
    std::size_t max_bytes_;
    std::size_t bytes_ = 0; // of the reply being built
    std::array<frame, 16> stack_{};
    std::size_t depth_ = 0;
};

redisReplyObjectFunctions reply_builder::functions = {
    &reply_builder::on_string, &reply_builder::on_array, &reply_builder::on_integer,
    &reply_builder::on_nil, &reply_builder::on_free};

reply_reader::reply_reader(sink_fn next_sink, void* owner, std::size_t max_reply_bytes)
    : builder_(std::make_unique<reply_builder>(next_sink, owner, max_reply_bytes))
    , max_bytes_(max_reply_bytes) {
    reset();
}

reply_reader::~reply_reader() {
    if (reader_) {
        redisReaderFree(reader_);
    }
}

void reply_reader::reset() {
    if (reader_) {
        redisReaderFree(reader_);
        reader_ = nullptr;
    }
    reader_ = redisReaderCreateWithFunctions(&reply_builder::functions);
    if (!reader_) {
        throw std::bad_alloc();
    }
    reader_->maxbuf = 0; // keep the buffer: no free and malloc after each large reply
    reader_->privdata = builder_.get();
    builder_->reset();
}

bool reply_reader::feed(const char* data, std::size_t n) {
    // hiredis holds a bulk string whole before handing it over, however long the length
    // its header announced: what waits unparsed is bounded here.
    return redisReaderFeed(reader_, data, n) == REDIS_OK &&
           reader_->len - reader_->pos <= max_bytes_;
}

reply_reader::result reply_reader::next() {
    void* reply = nullptr;
    if (redisReaderGetReply(reader_, &reply) != REDIS_OK) {
        return result::protocol_error;
    }
    if (!reply) {
        return result::incomplete;
    }
    builder_->in_reply_ = false;
    return result::reply;
}

bool reply_reader::in_reply() const noexcept {
    return builder_->in_reply_;
}

void reply_reader::drop_current() noexcept {
    if (builder_->in_reply_) {
        builder_->sink_ = nullptr;
    }
}

void reply_reader::forget() noexcept {
    builder_->reset();
}

} // namespace timewheel::redis::detail
