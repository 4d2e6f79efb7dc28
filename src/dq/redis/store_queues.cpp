//
// src/dq/redis/store_queues.cpp
//
// dq::redis_store's named queues' settings records (docs/design/queues-and-flow-control.md,
// Decision 2): one hash and the ZSET of its names in a slot of their own, written by
// lua/queues.lua and read by lua/queues_read.lua, one call an operation. A record is
// '>I6I6I6' generation, created, updated, then the spec as detail::encode_queue_spec spells
// it (decoded here).
//

#include "store_impl.hpp"

#include <timewheel/dq/detail/input_checks.hpp>
#include <timewheel/dq/detail/redis_keys.hpp>

namespace timewheel::dq::detail {

using boost::system::error_code;
using replies::script_error;

namespace {

// A record of lua/queues.lua; false when it is not one.
bool decode_queue(std::string_view name, std::string_view rec, queue_status& st) {
    if (rec.size() < 18) {
        return false;
    }
    const auto* p = reinterpret_cast<const unsigned char*>(rec.data());
    std::uint64_t v[3] = {};
    for (std::size_t i = 0; i < 3; ++i) {
        for (std::size_t b = 0; b < 6; ++b) {
            v[i] = v[i] << 8 | p[6 * i + b];
        }
    }
    st.spec.id.assign(name);
    st.generation = v[0];
    st.created = time_point(duration(static_cast<std::int64_t>(v[1])));
    st.updated = time_point(duration(static_cast<std::int64_t>(v[2])));
    return decode_queue_spec(rec.substr(18), st.spec);
}

} // namespace

void redis_store_impl::push_queue_script(exec_state& st, const scripts::function& s,
                                         const std::vector<std::string>& args) {
    const std::vector<std::string> keys = {redis_keys::queues_key(opt_.name),
                                           redis_keys::queue_names_key(opt_.name)};
    st.req.push_fcall_range(*s.library, s.name, keys, args);
    if (s.writes && opt_.wait_replicas != 0 && backend_->cluster()) {
        st.waits.push_back(st.req.size());
        st.req.push("WAIT", static_cast<std::int64_t>(opt_.wait_replicas),
                    static_cast<std::int64_t>(opt_.wait_timeout.count()));
    }
    st.read_only = !s.writes;
}

void redis_store_impl::queue_write(std::string op, const queue_spec& spec,
                                   store::handler<void(error_code, std::string)> h) {
    auto st = std::make_shared<exec_state>();
    push_queue_script(*st, scripts::queues(),
                      {std::move(op), spec.id, detail::encode_queue_spec(spec)});
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        std::string answer;
        if (!ec) {
            const auto rep = resp[0];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else if (!rep.is_string()) {
                ec = error::store_error;
            } else {
                answer = std::string(rep.as_string());
            }
        }
        self->finish(std::move(h), ec, std::move(answer));
    });
}

void redis_store_impl::create_queue(queue_spec spec,
                                    store::handler<void(error_code, create_queue_result)> h) {
    queue_write("create", spec, [h = std::move(h)](error_code ec, std::string a) mutable {
        auto r = create_queue_result::created;
        if (!ec && a == "exists") {
            r = create_queue_result::exists;
        } else if (!ec && a != "created") {
            ec = error::store_error;
        }
        std::move(h)(ec, r);
    });
}

void redis_store_impl::update_queue(queue_spec spec, store::handler<void(error_code)> h) {
    queue_write("update", spec, [h = std::move(h)](error_code ec, std::string a) mutable {
        std::move(h)(!ec && a != "ok" ? error_code(error::store_error) : ec);
    });
}

void redis_store_impl::delete_queue(std::string id, store::handler<void(error_code)> h) {
    queue_spec spec;
    spec.id = std::move(id);
    queue_write("delete", spec, [h = std::move(h)](error_code ec, std::string a) mutable {
        std::move(h)(!ec && a != "ok" ? error_code(error::store_error) : ec);
    });
}

void redis_store_impl::get_queue(std::string id, store::handler<void(error_code, queue_status)> h) {
    auto st = std::make_shared<exec_state>();
    push_queue_script(*st, scripts::queues_read(), {"get", id});
    run(st, [self = shared_from_this(), id, h = std::move(h)](error_code ec,
                                                              redis::response& resp) mutable {
        queue_status out;
        if (!ec) {
            const auto rep = resp[0];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else if (!rep.is_string() || !decode_queue(id, rep.as_string(), out)) {
                ec = error::store_error;
            }
        }
        self->finish(std::move(h), ec, std::move(out));
    });
}

void redis_store_impl::list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                                   store::handler<void(error_code, queue_page)> h) {
    // From past the cursor, or from the prefix when that is further (byte order).
    std::string start = "-";
    if (!cursor.empty() && cursor >= id_prefix) {
        start = "(" + cursor;
    } else if (!id_prefix.empty()) {
        start = "[" + id_prefix;
    }
    auto st = std::make_shared<exec_state>();
    push_queue_script(
        *st, scripts::queues_read(),
        {"list", start, id_prefix, replies::number(static_cast<std::int64_t>(count + 1))});
    run(st, [self = shared_from_this(), count, h = std::move(h)](error_code ec,
                                                                 redis::response& resp) mutable {
        queue_page page;
        if (!ec) {
            const auto rep = resp[0];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else if (!rep.is_array() || rep.size() % 2 != 0 || rep.size() > 2 * (count + 1)) {
                // More entries than asked for: not queues_read.lua's answer.
                ec = error::store_error;
            } else {
                try {
                    for (std::size_t i = 0; i + 1 < rep.size(); i += 2) {
                        // Each name a queue's, after the one before (the answer's names are
                        // shown, and the last becomes the next page's cursor).
                        const auto name = rep[i].as_string();
                        queue_status q;
                        if (check_queue_name(name) ||
                            (!page.entries.empty() && name <= page.entries.back().spec.id) ||
                            !decode_queue(name, rep[i + 1].as_string(), q)) {
                            ec = error::store_error;
                            break;
                        }
                        page.entries.push_back(std::move(q));
                    }
                } catch (const std::exception&) {
                    ec = error::store_error;
                }
            }
        }
        if (ec) {
            page = {};
        } else if (page.entries.size() > count) {
            page.entries.resize(count);
            page.cursor = page.entries.back().spec.id;
        }
        self->finish(std::move(h), ec, std::move(page));
    });
}

} // namespace timewheel::dq::detail
