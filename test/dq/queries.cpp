//
// test/dq/queries.cpp
//
// Listing and counting tasks (store::list_tasks, count_tasks) on both stores
// (dq::redis_store against a real redis-server on loopback, with tasks both near, in `d`, and
// far, in slots; dq::sqlite_store on a file of its own), each case run on each: random
// submits, cancels, claims, starts, successes and failures against a simple model, then
// every state paged in both orders with random page sizes and filters, compared with the
// model's sorted list; pages while tasks come and go (what stays is seen exactly once); bad
// input refused with invalid_argument and nothing changed; counts against the model.
//
// The keys of ended tasks (the time they ended) are the store's clock: the model knows them
// to within the call that ended them, and a full listing checked against those windows is
// then the truth the filtered ones are compared with.
//

#include <timewheel/dq/queue.hpp>
#include <timewheel/dq/redis_store.hpp>
#include <timewheel/dq/sqlite_store.hpp>

#define BOOST_TEST_MODULE dq_queries
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <test/dq/support/store_calls.hpp>
#include <test/redis/support/redis_fixture.hpp>
#include <test/support/temp_dir.hpp>

#include <boost/asio/io_context.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace dq = timewheel::dq;
using timewheel::test::call;
using timewheel::test::redis_server;
using namespace std::chrono_literals;
using boost::system::error_code;

using timewheel::test::resp_command;

namespace {

redis_server& server() {
    static auto instance = std::make_unique<redis_server>();
    return *instance;
}

std::uint64_t seed() {
    static const std::uint64_t s = [] {
        const char* v = std::getenv("TIMEWHEEL_SEED");
        const std::uint64_t x = v ? std::strtoull(v, nullptr, 10) : std::random_device()();
        BOOST_TEST_MESSAGE("TIMEWHEEL_SEED=" << x);
        return x;
    }();
    return s;
}

// What the model knows of a task: its state and sort key, exactly (due times) or within the
// window of the call that ended it.
struct known {
    dq::task_state state = dq::task_state::delayed;
    dq::time_point lo{}, hi{}; // the key is in [lo, hi]; lo == hi when exact
};

struct fixture_base {
    boost::asio::io_context io;
    std::unique_ptr<dq::store> owned;
    std::map<std::string, known> model;
    std::map<std::string, std::string> tokens; // claimed id -> its lease token

    virtual ~fixture_base() = default;
    dq::store& store() { return *owned; }

    dq::time_point now() {
        auto [ec, t] = call<dq::time_point>(io, [&](auto h) { store().now(std::move(h)); });
        BOOST_REQUIRE(!ec);
        return t;
    }
    auto list(dq::task_query q) {
        return call<dq::task_page>(io,
                                   [&](auto h) { store().list_tasks(std::move(q), std::move(h)); });
    }
    dq::task_counts counts() {
        auto [ec, c] =
            call<dq::task_counts>(io, [&](auto h) { store().count_tasks(std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return c;
    }
    void submit(const std::string& id, dq::time_point due) {
        dq::task t;
        t.id = id;
        t.due = due;
        t.payload = "payload of " + id;
        auto [ec, r, got] = call<dq::submit_result, std::string>(
            io, [&](auto h) { store().submit(std::move(t), std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_REQUIRE(r == dq::submit_result::created);
        model[id] = {dq::task_state::delayed, due, due};
    }
    void cancel(const std::string& id) {
        const auto lo = now();
        auto [ec, r] =
            call<dq::cancel_result>(io, [&](auto h) { store().cancel(id, std::move(h)); });
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(r == dq::cancel_result::cancelled);
        model[id] = {dq::task_state::cancelled, lo, now()};
        tokens.erase(id);
    }
    // Claims what is due by now (the model's past-due tasks): they become prefetched.
    void claim(std::size_t batch) {
        dq::claim_options o;
        o.worker = "w";
        o.horizon = 0ms;
        o.batch = batch;
        auto [ec, r] = call<dq::claim_result>(io, [&](auto h) { store().claim(o, std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        for (auto& t : r.tasks) {
            BOOST_REQUIRE(model.at(t.id).state == dq::task_state::delayed);
            model[t.id].state = dq::task_state::prefetched;
            tokens[t.id] = t.token;
        }
    }
    void start(const std::string& id) {
        auto [ec, r] = call<std::vector<dq::start_result>>(io, [&](auto h) {
            store().start({{id, tokens.at(id)}}, std::move(h));
        });
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(r.at(0) == dq::start_result::started);
        model[id].state = dq::task_state::running;
    }
    void finish(const std::string& id, bool ok) {
        const auto lo = now();
        dq::ack a{{id, tokens.at(id)},
                  ok ? dq::outcome::success() : dq::outcome::failure("broken " + id),
                  lo,
                  lo};
        auto [ec, r] = call<std::vector<dq::ack_result>>(
            io, [&](auto h) { store().acknowledge({a}, std::move(h)); });
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(r.at(0) == dq::ack_result::ok);
        model[id] = {ok ? dq::task_state::finished : dq::task_state::dead, lo, now()};
        tokens.erase(id);
    }

    // Every page of `q` (its limit kept), in order; fails the test on an error or a loop.
    std::vector<dq::task_page::entry> walk(dq::task_query q) {
        std::vector<dq::task_page::entry> all;
        for (int pages = 0; pages < 100000; ++pages) {
            auto [ec, page] = list(q);
            BOOST_REQUIRE_MESSAGE(!ec, ec.message());
            all.insert(all.end(), page.entries.begin(), page.entries.end());
            if (page.cursor.empty()) {
                return all;
            }
            BOOST_REQUIRE(page.cursor != q.cursor);
            q.cursor = page.cursor;
        }
        BOOST_FAIL("the pages never ended");
        return all;
    }

    // The model's tasks in state `s`, in the order of its key then id.
    std::vector<std::string> ids_in(dq::task_state s) const {
        std::vector<std::string> out;
        for (const auto& [id, k] : model) {
            if (k.state == s) {
                out.push_back(id);
            }
        }
        return out;
    }
};

struct redis_fx : fixture_base {
    redis_fx() {
        server().command(resp_command({"FLUSHALL"}));
        dq::redis_store_options o;
        o.name = "q";
        o.shards = 4;
        o.buckets = 8;
        owned = std::make_unique<dq::redis_store>(io.get_executor(), server().config(), o);
    }
};

struct sqlite_fx : fixture_base {
    timewheel::test::temp_dir dir;
    sqlite_fx() {
        dq::sqlite_store_options o;
        o.path = dir.file("q.db");
        owned = std::make_unique<dq::sqlite_store>(io.get_executor(), o);
    }
};

using fixtures = boost::mpl::list<redis_fx, sqlite_fx>;

constexpr dq::task_state all_states[] = {dq::task_state::delayed, dq::task_state::prefetched,
                                         dq::task_state::running, dq::task_state::finished,
                                         dq::task_state::dead,    dq::task_state::cancelled};

bool before(const dq::task_page::entry& a, const dq::task_page::entry& b) {
    return std::pair(a.key, std::string_view(a.id)) < std::pair(b.key, std::string_view(b.id));
}

// A random id over a small alphabet, so that prefixes match several ids.
std::string random_id(std::mt19937_64& rng, int n) {
    static constexpr char alphabet[] = "abcAB{}:\xc3\xa9";
    std::string id;
    const auto len = 1 + rng() % 6;
    for (std::size_t i = 0; i < len; ++i) {
        id += alphabet[rng() % (sizeof alphabet - 1)];
    }
    return id + "#" + std::to_string(n);
}

// Checks the full listing of state `s` against the model: the same ids, each once, every
// key in its window, in (key, id) order (reversed when descending). Returns it.
template <typename F>
std::vector<dq::task_page::entry> check_full(F& f, dq::task_state s, bool descending,
                                             std::size_t limit) {
    dq::task_query q;
    q.state = s;
    q.descending = descending;
    q.limit = limit;
    auto got = f.walk(q);
    std::set<std::string> seen;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const auto& e = got[i];
        BOOST_TEST_INFO("state " << s << ", id " << e.id);
        BOOST_TEST(seen.insert(e.id).second);
        BOOST_TEST(e.state == s);
        const auto it = f.model.find(e.id);
        BOOST_REQUIRE(it != f.model.end());
        BOOST_TEST(it->second.state == s);
        BOOST_TEST((e.key >= it->second.lo && e.key <= it->second.hi));
        if (s <= dq::task_state::running) {
            BOOST_TEST((e.due == e.key));
            BOOST_TEST(e.payload == "payload of " + e.id);
        }
        if (s == dq::task_state::dead) {
            BOOST_TEST(e.last_error == "broken " + e.id);
        }
        if (i > 0) {
            BOOST_TEST((descending ? before(e, got[i - 1]) : before(got[i - 1], e)));
        }
    }
    const auto want = f.ids_in(s);
    BOOST_TEST(seen == std::set<std::string>(want.begin(), want.end()));
    return got;
}

} // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(random_operations_then_every_state_pages_as_the_model_sorts_it, F,
                              fixtures) {
    F f;
    std::mt19937_64 rng(seed());
    const auto base = f.now();
    int n = 0;
    // Delayed tasks far (slots on Redis) and near (its `d`), some at one same due time
    // (ties broken by id); past-due ones for the claims.
    for (int i = 0; i < 120; ++i) {
        dq::time_point due;
        switch (rng() % 4) {
        case 0:
            due = base + 1h + dq::duration(rng() % 86400000);
            break;
        case 1:
            due = base + 2h;
            break;
        case 2:
            due = base + 1h + dq::duration(rng() % 5000);
            break;
        default:
            due = base - dq::duration(1 + rng() % 100000);
            break;
        }
        f.submit(random_id(rng, n++), due);
    }
    for (int step = 0; step < 60; ++step) {
        const auto pick = [&](dq::task_state s) -> std::string {
            auto ids = f.ids_in(s);
            return ids.empty() ? std::string() : ids[rng() % ids.size()];
        };
        switch (rng() % 6) {
        case 0:
            f.claim(1 + rng() % 4);
            break;
        case 1:
            if (auto id = pick(dq::task_state::prefetched); !id.empty()) {
                f.start(id);
            }
            break;
        case 2:
        case 3:
            if (auto id = pick(dq::task_state::running); !id.empty()) {
                f.finish(id, rng() % 2 == 0);
            }
            break;
        case 4:
            if (auto id = pick(rng() % 3 ? dq::task_state::delayed : dq::task_state::prefetched);
                !id.empty()) {
                f.cancel(id);
            }
            break;
        default:
            f.submit(random_id(rng, n++), base - dq::duration(1 + rng() % 1000));
            break;
        }
    }
    // Then whatever the random steps left empty, so that every state is listed.
    for (int tries = 0; tries < 40; ++tries) {
        using enum dq::task_state;
        if (f.ids_in(prefetched).size() < 2) {
            f.submit(random_id(rng, n++), base - 200000ms);
            f.claim(4);
        } else if (f.ids_in(running).size() < 3) {
            f.start(f.ids_in(prefetched).front());
        } else if (f.ids_in(finished).empty()) {
            f.finish(f.ids_in(running).front(), true);
        } else if (f.ids_in(dead).empty()) {
            f.finish(f.ids_in(running).front(), false);
        } else if (f.ids_in(cancelled).empty()) {
            f.cancel(f.ids_in(delayed).front());
        } else {
            break;
        }
    }
    for (auto s : all_states) {
        BOOST_TEST_CONTEXT("state " << s) {
            BOOST_TEST(!f.ids_in(s).empty());
            const auto asc = check_full(f, s, false, 1 + rng() % 7);
            const auto desc = check_full(f, s, true, 1 + rng() % 7);
            BOOST_TEST(asc.size() == desc.size());
            for (std::size_t i = 0; i < asc.size() && i < desc.size(); ++i) {
                BOOST_TEST(asc[i].id == desc[desc.size() - 1 - i].id);
            }
            // Filters, against the checked full listing: a key range and an id prefix.
            for (int round = 0; round < 4 && !asc.empty(); ++round) {
                const auto a = asc[rng() % asc.size()].key;
                const auto b = asc[rng() % asc.size()].key + dq::duration(rng() % 2);
                const std::string prefix =
                    round % 2 ? std::string() : asc[rng() % asc.size()].id.substr(0, 1 + rng() % 2);
                for (bool descending : {false, true}) {
                    dq::task_query q;
                    q.state = s;
                    q.descending = descending;
                    q.limit = 1 + rng() % 5;
                    q.id_prefix = prefix;
                    if (a < b) {
                        q.after = a;
                        q.before = b;
                    } else {
                        q.after = b;
                    }
                    std::vector<std::string> want;
                    for (const auto& e : asc) {
                        if (e.key >= *q.after && (!q.before || e.key < *q.before) &&
                            e.id.compare(0, prefix.size(), prefix) == 0) {
                            want.push_back(e.id);
                        }
                    }
                    if (descending) {
                        std::reverse(want.begin(), want.end());
                    }
                    std::vector<std::string> got;
                    for (const auto& e : f.walk(q)) {
                        got.push_back(e.id);
                    }
                    BOOST_TEST(got == want, boost::test_tools::per_element());
                }
            }
        }
    }
    // Counts against the model. No delayed task is due between the past-due ones and an hour
    // from now, so due_now does not depend on when the count ran.
    const auto c = f.counts();
    BOOST_TEST(c.delayed == f.ids_in(dq::task_state::delayed).size());
    BOOST_TEST(c.prefetched == f.ids_in(dq::task_state::prefetched).size());
    BOOST_TEST(c.running == f.ids_in(dq::task_state::running).size());
    BOOST_TEST(c.finished == f.ids_in(dq::task_state::finished).size());
    BOOST_TEST(c.dead == f.ids_in(dq::task_state::dead).size());
    BOOST_TEST(c.cancelled == f.ids_in(dq::task_state::cancelled).size());
    std::uint64_t due_now = 0;
    std::optional<dq::time_point> oldest;
    for (const auto& [id, k] : f.model) {
        if (k.state == dq::task_state::delayed) {
            due_now += k.lo <= base ? 1 : 0;
            oldest = oldest ? std::min(*oldest, k.lo) : k.lo;
        }
    }
    BOOST_TEST(c.due_now == due_now);
    BOOST_TEST((c.oldest_due == oldest));
    BOOST_TEST((c.now >= base));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(pages_while_tasks_come_and_go_return_what_stays_exactly_once, F,
                              fixtures) {
    F f;
    std::mt19937_64 rng(seed() + 1);
    const auto base = f.now();
    int n = 0;
    auto due = [&] { return base + 1h + dq::duration(rng() % 3600000); };
    std::set<std::string> stays, goes;
    for (int i = 0; i < 150; ++i) {
        const auto id = "s" + std::to_string(n++);
        f.submit(id, due());
        (i % 3 ? stays : goes).insert(id);
    }
    for (bool descending : {false, true}) {
        dq::task_query q;
        q.descending = descending;
        q.limit = 7;
        std::multiset<std::string> seen;
        for (int pages = 0; pages < 1000; ++pages) {
            auto [ec, page] = f.list(q);
            BOOST_REQUIRE(!ec);
            for (const auto& e : page.entries) {
                seen.insert(e.id);
            }
            if (page.cursor.empty()) {
                break;
            }
            q.cursor = page.cursor;
            // Between pages: new tasks anywhere in the order, some of those that go cancelled.
            for (int k = 0; k < 3; ++k) {
                f.submit("new" + std::to_string(n++), due());
            }
            if (!goes.empty()) {
                auto it = std::next(goes.begin(), static_cast<long>(rng() % goes.size()));
                f.cancel(*it);
                goes.erase(it);
            }
        }
        for (const auto& id : stays) {
            BOOST_TEST_INFO("id " << id);
            BOOST_TEST(seen.count(id) == 1u);
        }
        for (const auto& id : seen) {
            BOOST_TEST_INFO("id " << id);
            BOOST_TEST(seen.count(id) == 1u); // nothing twice, stayed or moved
        }
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(bad_input_is_refused_and_changes_nothing, F, fixtures) {
    F f;
    const auto base = f.now();
    for (int i = 0; i < 5; ++i) {
        f.submit("t" + std::to_string(i), base + 1h + dq::duration(i));
    }
    dq::task_query first;
    first.limit = 2;
    auto [ec0, page] = f.list(first);
    BOOST_REQUIRE(!ec0);
    BOOST_REQUIRE(!page.cursor.empty());
    const auto before_counts = f.counts();

    auto refused = [&](dq::task_query q, dq::error want) {
        auto [ec, p] = f.list(std::move(q));
        BOOST_TEST(ec == want);
        BOOST_TEST(p.entries.empty());
        BOOST_TEST(p.cursor.empty());
    };
    dq::task_query q;
    q.limit = 0;
    refused(q, dq::error::invalid_argument);
    q.limit = 1001;
    refused(q, dq::error::invalid_argument);
    q = {};
    q.after = base;
    q.before = base;
    refused(q, dq::error::invalid_argument);
    q.before = base - 1ms;
    refused(q, dq::error::invalid_argument);
    q = {};
    q.after = dq::time_point(-1ms);
    refused(q, dq::error::invalid_argument);
    for (const std::string& garbage :
         std::vector<std::string>{"zz", "0a", "0a12", "0a12.", "0a12.6", "0a12.6g", "0aX.61",
                                  "0a99999999999999999.61", "9a12.61", "0x12.61", page.cursor + "0",
                                  page.cursor.substr(0, page.cursor.size() - 1)}) {
        BOOST_TEST_INFO("cursor " << garbage);
        q = {};
        q.cursor = garbage;
        refused(q, dq::error::invalid_argument);
    }
    // A cursor is bound to its state and order.
    q = {};
    q.cursor = page.cursor;
    q.state = dq::task_state::dead;
    refused(q, dq::error::invalid_argument);
    q.state = dq::task_state::delayed;
    q.descending = true;
    refused(q, dq::error::invalid_argument);
    q = {};
    q.id_prefix = std::string(f.store().get_limits().max_id_bytes + 1, 'a');
    refused(q, dq::error::id_too_long);
    q.id_prefix = std::string("a\0b", 3);
    refused(q, dq::error::invalid_id);

    const auto after_counts = f.counts();
    BOOST_TEST(after_counts.delayed == before_counts.delayed);
    BOOST_TEST(after_counts.delayed == 5u);
    // The good cursor still goes on where it stopped.
    first.cursor = page.cursor;
    auto [ec1, rest] = f.list(first);
    BOOST_REQUIRE(!ec1);
    BOOST_REQUIRE(rest.entries.size() == 2u);
    BOOST_TEST(rest.entries[0].id == "t2");
    BOOST_TEST(rest.entries[1].id == "t3");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(the_queue_lists_and_counts_through_completion_tokens, F, fixtures) {
    F f;
    f.submit("only", f.now() + 1h);
    dq::queue q(f.store());
    std::optional<dq::task_page> page;
    std::optional<dq::task_counts> counts;
    q.async_list_tasks(dq::task_query{}, [&](error_code ec, dq::task_page p) {
        BOOST_TEST(!ec);
        page = std::move(p);
    });
    q.async_count_tasks([&](error_code ec, dq::task_counts c) {
        BOOST_TEST(!ec);
        counts = c;
    });
    timewheel::test::run_until(f.io, [&] { return page && counts; });
    BOOST_REQUIRE(page);
    BOOST_REQUIRE(page->entries.size() == 1u);
    BOOST_TEST(page->entries[0].id == "only");
    BOOST_TEST(page->cursor.empty());
    BOOST_REQUIRE(counts);
    BOOST_TEST(counts->delayed == 1u);
    BOOST_TEST(counts->due_now == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(tasks_that_end_in_one_call_page_in_id_order_both_ways, F, fixtures) {
    // One acknowledge ends them all at one millisecond (or a few): the ties of the sort key
    // are broken by id, across pages of every size.
    F f;
    const auto base = f.now();
    for (int i = 0; i < 12; ++i) {
        f.submit("tie" + std::to_string(i % 2 ? 20 - i : i), base - 1000ms);
    }
    for (int tries = 0; tries < 20 && !f.ids_in(dq::task_state::delayed).empty(); ++tries) {
        f.claim(100);
    }
    BOOST_REQUIRE(f.ids_in(dq::task_state::delayed).empty());
    std::vector<dq::ack> acks;
    const auto lo = f.now();
    for (const auto& [id, token] : f.tokens) {
        acks.push_back({{id, token}, dq::outcome::success(), lo, lo});
    }
    auto [ec, r] = call<std::vector<dq::ack_result>>(
        f.io, [&](auto h) { f.store().acknowledge(acks, std::move(h)); });
    BOOST_REQUIRE(!ec);
    const auto hi = f.now();
    for (const auto& a : acks) {
        f.model[a.lease.id] = {dq::task_state::finished, lo, hi};
    }
    f.tokens.clear();
    for (std::size_t limit : {1u, 2u, 5u, 12u}) {
        BOOST_TEST_CONTEXT("limit " << limit) {
            const auto asc = check_full(f, dq::task_state::finished, false, limit);
            const auto desc = check_full(f, dq::task_state::finished, true, limit);
            BOOST_TEST(asc.size() == 12u);
            BOOST_TEST(desc.size() == 12u);
        }
    }
}

// --- Named queues (docs/design/queues-and-flow-control.md, step 1) ---------------------------

namespace {

template <typename F>
auto create_queue(F& f, dq::queue_spec spec) {
    return call<dq::create_queue_result>(
        f.io, [&](auto h) { f.store().create_queue(std::move(spec), std::move(h)); });
}
template <typename F>
auto get_queue(F& f, std::string id) {
    return call<dq::queue_status>(
        f.io, [&](auto h) { f.store().get_queue(std::move(id), std::move(h)); });
}
template <typename F>
auto list_queues(F& f, std::string prefix, std::string cursor, std::size_t count) {
    return call<dq::queue_page>(f.io, [&](auto h) {
        f.store().list_queues(std::move(prefix), std::move(cursor), count, std::move(h));
    });
}
template <typename F>
error_code update_queue(F& f, dq::queue_spec spec) {
    return std::get<0>(
        call<>(f.io, [&](auto h) { f.store().update_queue(std::move(spec), std::move(h)); }));
}
template <typename F>
error_code delete_queue(F& f, std::string id) {
    return std::get<0>(
        call<>(f.io, [&](auto h) { f.store().delete_queue(std::move(id), std::move(h)); }));
}
template <typename F>
std::vector<std::string> queue_names(F& f, const std::string& prefix, std::size_t count) {
    std::vector<std::string> out;
    std::string cursor;
    for (int pages = 0; pages < 100; ++pages) {
        auto [ec, page] = list_queues(f, prefix, cursor, count);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_REQUIRE(page.entries.size() <= count);
        for (const auto& q : page.entries) {
            out.push_back(q.spec.id);
        }
        if (page.cursor.empty()) {
            return out;
        }
        cursor = page.cursor;
    }
    BOOST_FAIL("the pages never ended");
    return out;
}
template <typename F>
std::pair<error_code, dq::submit_result> submit_to(F& f, std::string id, std::string queue) {
    dq::task t;
    t.id = std::move(id);
    t.due = 1h;
    t.payload = "p";
    t.queue = std::move(queue);
    auto [ec, r, got] = call<dq::submit_result, std::string>(
        f.io, [&](auto h) { f.store().submit(std::move(t), std::move(h)); });
    return {ec, r};
}

} // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(queue_settings_are_created_once_read_listed_changed_and_deleted, F,
                              fixtures) {
    F f;
    const dq::retry_policy three{3, 10ms, 100ms};
    auto [ec, r] = create_queue(f, {"acme/billing", three});
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    BOOST_TEST(r == dq::create_queue_result::created);
    // Again with the same spec: found; with another: a conflict, the first kept.
    std::tie(ec, r) = create_queue(f, {"acme/billing", three});
    BOOST_TEST(!ec);
    BOOST_TEST(r == dq::create_queue_result::exists);
    std::tie(ec, r) = create_queue(f, {"acme/billing", std::nullopt});
    BOOST_TEST(ec == dq::error::queue_conflict);
    auto [gec, st] = get_queue(f, "acme/billing");
    BOOST_REQUIRE_MESSAGE(!gec, gec.message());
    BOOST_TEST(st.spec.id == "acme/billing");
    BOOST_TEST((st.spec.retry == three));
    BOOST_TEST(st.generation == 1u);
    BOOST_TEST(st.created.time_since_epoch().count() > 0);

    for (const char* name : {"alpha", "zeta", "acme/ads", "b-1_x"}) {
        std::tie(ec, r) = create_queue(f, {name, std::nullopt});
        BOOST_REQUIRE_MESSAGE(!ec, name << ": " << ec.message());
    }
    // Byte order, "default" among them, whatever the page size.
    const std::vector<std::string> all = {"acme/ads", "acme/billing", "alpha",
                                          "b-1_x",    "default",      "zeta"};
    for (std::size_t count : {1u, 2u, 4u, 100u}) {
        BOOST_TEST_INFO("count " << count);
        BOOST_TEST(queue_names(f, "", count) == all, boost::test_tools::per_element());
    }
    BOOST_TEST(queue_names(f, "acme/", 1) == (std::vector<std::string>{"acme/ads", "acme/billing"}),
               boost::test_tools::per_element());
    BOOST_TEST(queue_names(f, "de", 5) == std::vector<std::string>{"default"},
               boost::test_tools::per_element());
    BOOST_TEST(queue_names(f, "q", 5).empty());

    // The default queue: read, listed, never created, changed or deleted.
    std::tie(gec, st) = get_queue(f, "default");
    BOOST_TEST(!gec);
    BOOST_TEST(st.generation == 0u);
    BOOST_TEST(!st.spec.retry);
    std::tie(ec, r) = create_queue(f, {"default", std::nullopt});
    BOOST_TEST(ec == dq::error::default_queue);
    BOOST_TEST(update_queue(f, {"default", three}) == dq::error::default_queue);
    BOOST_TEST(delete_queue(f, "default") == dq::error::default_queue);

    // An update replaces the settings and counts a generation.
    BOOST_TEST(!update_queue(f, {"acme/billing", std::nullopt}));
    std::tie(gec, st) = get_queue(f, "acme/billing");
    BOOST_TEST(!gec);
    BOOST_TEST(!st.spec.retry);
    BOOST_TEST(st.generation == 2u);
    BOOST_TEST(update_queue(f, {"nope", three}) == dq::error::not_found);

    // Bad names and policies: refused, nothing changed.
    for (const char* bad : {"", "Upper", "a b", "a/b/c", "/a", "a/", "caf\xc3\xa9", "x{y}"}) {
        BOOST_TEST_INFO("name '" << bad << "'");
        std::tie(ec, r) = create_queue(f, {bad, std::nullopt});
        BOOST_TEST(ec == dq::error::invalid_queue);
        BOOST_TEST(std::get<0>(get_queue(f, bad)) == dq::error::invalid_queue);
        BOOST_TEST(delete_queue(f, bad) == dq::error::invalid_queue);
    }
    std::tie(ec, r) = create_queue(f, {std::string("a\0b", 3), std::nullopt});
    BOOST_TEST(ec == dq::error::invalid_queue);
    std::tie(ec, r) = create_queue(f, {std::string(65, 'a'), std::nullopt});
    BOOST_TEST(ec == dq::error::invalid_queue);
    std::tie(ec, r) =
        create_queue(f, {std::string(64, 'a') + "/" + std::string(64, 'b'), std::nullopt});
    BOOST_TEST(!ec); // the longest name
    std::tie(ec, r) = create_queue(f, {"zero", dq::retry_policy{0, 1ms, 2ms}});
    BOOST_TEST(ec == dq::error::zero_attempts);
    BOOST_TEST(std::get<0>(list_queues(f, "", "", 0)) == dq::error::invalid_argument);
    BOOST_TEST(queue_names(f, "", 100).size() == all.size() + 1);

    // Delete: gone, then not found.
    BOOST_TEST(!delete_queue(f, "alpha"));
    BOOST_TEST(std::get<0>(get_queue(f, "alpha")) == dq::error::not_found);
    BOOST_TEST(delete_queue(f, "alpha") == dq::error::not_found);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_task_keeps_its_queue_and_a_queue_holding_tasks_is_not_deleted, F,
                              fixtures) {
    F f;
    BOOST_REQUIRE(!std::get<0>(create_queue(f, {"acme/billing", std::nullopt})));
    BOOST_REQUIRE(!std::get<0>(create_queue(f, {"idle", std::nullopt})));
    BOOST_TEST(!submit_to(f, "in-billing", "acme/billing").first);
    BOOST_TEST(!submit_to(f, "in-default", "").first);
    BOOST_TEST(!submit_to(f, "named-default", "default").first);
    // A bad name: refused, nothing written.
    BOOST_TEST(submit_to(f, "bad", "No Such").first == dq::error::invalid_queue);
    BOOST_TEST(std::get<1>(f.list(dq::task_query{})).entries.size() == 3u);

    const auto status = [&](const std::string& id) {
        auto [ec, st] =
            call<dq::task_status>(f.io, [&](auto h) { f.store().status(id, std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return st;
    };
    BOOST_TEST(status("in-billing").queue == "acme/billing");
    BOOST_TEST(status("in-default").queue == "default");
    BOOST_TEST(status("named-default").queue == "default");
    // A replacing submit keeps the queue the task was created in.
    {
        dq::task t;
        t.id = "in-billing";
        t.due = 2h;
        t.replace = true;
        t.payload = "new";
        auto [ec, r, id] = call<dq::submit_result, std::string>(
            f.io, [&](auto h) { f.store().submit(std::move(t), std::move(h)); });
        BOOST_TEST(!ec);
        BOOST_TEST(r == dq::submit_result::replaced);
        BOOST_TEST(status("in-billing").queue == "acme/billing");
        BOOST_TEST(status("in-billing").payload == "new");
    }

    // Listings carry the queue and filter on it.
    dq::task_query q;
    q.queue = "acme/billing";
    auto [lec, page] = f.list(q);
    BOOST_REQUIRE_MESSAGE(!lec, lec.message());
    BOOST_REQUIRE(page.entries.size() == 1u);
    BOOST_TEST(page.entries[0].id == "in-billing");
    BOOST_TEST(page.entries[0].queue == "acme/billing");
    q.queue = "default";
    auto defaults = f.walk(q);
    BOOST_TEST(defaults.size() == 2u);
    for (const auto& e : defaults) {
        BOOST_TEST(e.queue == "default");
    }
    q.queue = "idle";
    BOOST_TEST(f.walk(q).empty());
    q.queue = "Bad";
    BOOST_TEST(std::get<0>(f.list(q)) == dq::error::invalid_queue);
    q.queue = "acme/billing";
    q.state = dq::task_state::finished;
    BOOST_TEST(std::get<0>(f.list(q)) == dq::error::invalid_argument);

    // A delayed task holds its queue; once cancelled it no longer does.
    BOOST_TEST(delete_queue(f, "acme/billing") == dq::error::queue_not_empty);
    BOOST_TEST(!std::get<0>(get_queue(f, "acme/billing")));
    BOOST_TEST(!delete_queue(f, "idle"));
    f.cancel("in-billing");
    BOOST_TEST(status("in-billing").queue == "acme/billing");
    BOOST_TEST(!delete_queue(f, "acme/billing"));
    BOOST_TEST(std::get<0>(get_queue(f, "acme/billing")) == dq::error::not_found);
}

// A file written before queues (schema version 2, no queue column): opened, its tasks read as
// the default queue's, and new tasks take a queue; nothing of the old rows lost.
BOOST_AUTO_TEST_CASE(an_sqlite_file_from_before_queues_reads_its_tasks_as_the_default_queue) {
    timewheel::test::temp_dir dir;
    const std::string path = dir.file("old.db");
    {
        sqlite3* db = nullptr;
        BOOST_REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
        const char* sql = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
INSERT INTO meta VALUES ('schema_version', 2);
CREATE TABLE tasks(id BLOB NOT NULL UNIQUE, state INTEGER NOT NULL, due INTEGER NOT NULL,
  attempt INTEGER NOT NULL, created INTEGER NOT NULL, updated INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL, base INTEGER NOT NULL, cap INTEGER NOT NULL,
  last_error BLOB NOT NULL, payload BLOB NOT NULL, token BLOB, lease_until INTEGER,
  lease_attempt INTEGER, started INTEGER, worker BLOB);
INSERT INTO tasks(id, state, due, attempt, created, updated, max_attempts, base, cap,
  last_error, payload) VALUES (CAST('old' AS BLOB), 0, 4102444800000, 0, 1, 1, 5, 1000,
  600000, x'', CAST('old payload' AS BLOB));
)sql";
        char* err = nullptr;
        const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
        BOOST_REQUIRE_MESSAGE(rc == SQLITE_OK, (err ? err : "?"));
        sqlite3_close(db);
    }
    boost::asio::io_context io;
    dq::sqlite_store_options o;
    o.path = path;
    dq::sqlite_store s(io.get_executor(), o);
    auto [ec, st] = call<dq::task_status>(io, [&](auto h) { s.status("old", std::move(h)); });
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    BOOST_TEST(st.queue == "default");
    BOOST_TEST(st.payload == "old payload");
    dq::task t;
    t.id = "new";
    t.due = 1h;
    t.queue = "fresh";
    auto [sec, r, id] =
        call<dq::submit_result, std::string>(io, [&](auto h) { s.submit(t, std::move(h)); });
    BOOST_TEST(!sec);
    dq::task_query q;
    q.queue = "default";
    auto [lec, page] = call<dq::task_page>(io, [&](auto h) { s.list_tasks(q, std::move(h)); });
    BOOST_TEST(!lec);
    BOOST_REQUIRE(page.entries.size() == 1u);
    BOOST_TEST(page.entries[0].id == "old");
    q.queue = "fresh";
    std::tie(lec, page) = call<dq::task_page>(io, [&](auto h) { s.list_tasks(q, std::move(h)); });
    BOOST_REQUIRE(page.entries.size() == 1u);
    BOOST_TEST(page.entries[0].queue == "fresh");
}
