//
// src/dq/redis/scripts.cpp
//
// The library of Redis Functions of dq::redis_store: the prelude (lua/prelude/*.lua) and
// lua/schedule_helpers.lua once, then each lua/<name>.lua as a function of its own with its
// flags (the generated lua_sources.hpp holds the files as literals), built once, named after
// its SHA1, on first use. How the functions store a task is told in lua/prelude/records.lua.
//
// The scripts spell the shard's key names themselves (KEYS in a fixed order, the others from
// the prefix): they are checked here, at compile time, against the key table
// (timewheel/dq/detail/redis_keys.hpp), so that the table, the store and the Lua cannot drift
// apart.
//

#include "scripts.hpp"

#include "lua_sources.hpp"

#include <timewheel/dq/detail/redis_keys.hpp>

#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace timewheel::dq::detail::scripts {

namespace {

// Whether `text` at `pos` reads `word`; if so, moves `pos` past it.
constexpr bool eat(std::string_view text, std::size_t& pos, std::string_view word) {
    if (pos > text.size() || text.substr(pos, word.size()) != word) {
        return false;
    }
    pos += word.size();
    return true;
}

// The prelude's begin() names the KEYS as the table orders them:
// "KD, KL, ... = KEYS[1], KEYS[2], ...".
constexpr bool declares_shard_keys(std::string_view lua) {
    constexpr auto& keys = redis_keys::shard_keys;
    static_assert(keys.size() <= 9, "KEYS[i] is read as one digit");
    for (auto at = lua.find(keys[0].lua); at != std::string_view::npos;
         at = lua.find(keys[0].lua, at + 1)) {
        std::size_t pos = at;
        bool ok = true;
        for (std::size_t i = 0; ok && i < keys.size(); ++i) {
            ok = eat(lua, pos, keys[i].lua) && eat(lua, pos, i + 1 < keys.size() ? ", " : " = ");
        }
        for (std::size_t i = 0; ok && i < keys.size(); ++i) {
            ok = eat(lua, pos, "KEYS[") &&
                 eat(lua, pos, std::string_view("123456789").substr(i, 1)) && eat(lua, pos, "]") &&
                 (i + 1 == keys.size() || eat(lua, pos, ", "));
        }
        if (ok) {
            return true;
        }
    }
    return false;
}

// The prelude names each other key of the table from the prefix: P .. '<suffix up to <>'.
constexpr bool names_script_keys(std::string_view lua) {
    for (const auto& k : redis_keys::script_named_keys) {
        const auto stem = k.suffix.substr(0, k.suffix.find('<'));
        bool found = false;
        for (auto at = lua.find("P .. '"); !found && at != std::string_view::npos;
             at = lua.find("P .. '", at + 1)) {
            std::size_t pos = at + 6;
            found = eat(lua, pos, stem) && eat(lua, pos, "'");
        }
        if (!found) {
            return false;
        }
    }
    return true;
}

static_assert(declares_shard_keys(lua::prelude),
              "lua/prelude/header.lua must name KEYS as redis_keys::shard_keys orders them");
static_assert(names_script_keys(lua::prelude),
              "lua/prelude/*.lua must name the keys of redis_keys::script_named_keys");

// What Redis may do with a function (FUNCTION LOAD's flags): under maxmemory, one without
// allow-oom is refused before it runs (lua/prelude/header.lua, "Writes under OOM").
enum class kind { grows, frees, reads };

struct entry {
    std::string_view name;
    std::string_view body;
    kind k;
};

// clang-format off
constexpr entry entries[] = {
    {"config", lua::config, kind::frees}, // a store opened when Redis is full still works
    {"submit", lua::submit, kind::grows},
    {"cancel", lua::cancel, kind::frees},
    {"reschedule", lua::reschedule, kind::frees},
    {"status", lua::status, kind::reads},
    {"list_dead", lua::list_dead, kind::reads},
    {"requeue_dead", lua::requeue_dead, kind::grows},
    {"delete_dead", lua::delete_dead, kind::frees},
    {"claim", lua::claim, kind::frees},
    {"start", lua::start, kind::frees},
    {"renew", lua::renew, kind::frees},
    {"ack", lua::ack, kind::frees},
    {"release", lua::release, kind::frees},
    {"earliest_due", lua::earliest_due, kind::reads},
    {"schedule", lua::schedule, kind::grows},
    {"schedule_list", lua::schedule_list, kind::reads},
    {"schedule_due", lua::schedule_due, kind::reads},
    {"list_tasks", lua::list_tasks, kind::reads},
    {"task_entries", lua::task_entries, kind::reads},
    {"count_tasks", lua::count_tasks, kind::reads},
    {"materialise", lua::materialise, kind::grows},
    {"queues", lua::queues, kind::grows},
    {"queues_read", lua::queues_read, kind::reads},
};
// clang-format on

// The library's code: the prelude and the schedule helpers (made once, at load), then each
// body as a function that starts with begin() (config and the queues' records, which are no
// shard functions, without).
// KEYS and ARGV are the callback's parameters, so that the bodies read them as a script does.
std::string library_code() {
    std::string code;
    code.append(lua::prelude).append("\n").append(lua::schedule_helpers);
    for (const auto& e : entries) {
        code.append("\nredis.register_function{function_name = LIBRARY .. '_")
            .append(e.name)
            .append("', flags = {");
        code.append(e.k == kind::frees ? "'allow-oom'" : e.k == kind::reads ? "'no-writes'" : "");
        code.append("}, callback = function(KEYS, ARGV)\n");
        if (e.name != "config" && !e.name.starts_with("queues")) {
            code.append("begin(KEYS, ARGV)\n");
        }
        code.append(e.body).append("\nend}\n");
    }
    return code;
}

const function& named(std::string_view name) {
    static const std::vector<function> all = [] {
        std::vector<function> v;
        for (const auto& e : entries) {
            v.push_back({&library(), library().function_name(e.name), e.k != kind::reads});
        }
        return v;
    }();
    for (std::size_t i = 0; i < std::size(entries); ++i) {
        if (entries[i].name == name) {
            return all[i];
        }
    }
    throw std::logic_error("dq: no Redis function named " + std::string(name));
}

} // namespace

const redis::library& library() {
    static const redis::library lib("timewheel", library_code());
    return lib;
}

// clang-format off
const function& config() { static const function& f = named("config"); return f; }
const function& submit() { static const function& f = named("submit"); return f; }
const function& cancel() { static const function& f = named("cancel"); return f; }
const function& reschedule() { static const function& f = named("reschedule"); return f; }
const function& status() { static const function& f = named("status"); return f; }
const function& list_dead() { static const function& f = named("list_dead"); return f; }
const function& requeue_dead() { static const function& f = named("requeue_dead"); return f; }
const function& delete_dead() { static const function& f = named("delete_dead"); return f; }
const function& claim() { static const function& f = named("claim"); return f; }
const function& start() { static const function& f = named("start"); return f; }
const function& renew() { static const function& f = named("renew"); return f; }
const function& ack() { static const function& f = named("ack"); return f; }
const function& release() { static const function& f = named("release"); return f; }
const function& earliest_due() { static const function& f = named("earliest_due"); return f; }
const function& schedule() { static const function& f = named("schedule"); return f; }
const function& schedule_list() { static const function& f = named("schedule_list"); return f; }
const function& schedule_due() { static const function& f = named("schedule_due"); return f; }
const function& list_tasks() { static const function& f = named("list_tasks"); return f; }
const function& task_entries() { static const function& f = named("task_entries"); return f; }
const function& count_tasks() { static const function& f = named("count_tasks"); return f; }
const function& materialise() { static const function& f = named("materialise"); return f; }
const function& queues() { static const function& f = named("queues"); return f; }
const function& queues_read() { static const function& f = named("queues_read"); return f; }
// clang-format on

} // namespace timewheel::dq::detail::scripts
