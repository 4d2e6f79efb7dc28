//
// src/dq/redis/scripts.cpp
//
// The script objects of dq::redis_store: each shard script's text is the prelude
// (lua/prelude/*.lua) followed by its own lua/<name>.lua (the generated lua_sources.hpp holds
// them as literals), built once, with its SHA1, on first use. How the scripts store a task is
// told in lua/prelude/records.lua.
//
// The scripts spell the shard's key names themselves (KEYS in a fixed order, the others from
// the prefix): they are checked here, at compile time, against the key table
// (timewheel/dq/detail/redis_keys.hpp), so that the table, the store and the Lua cannot drift
// apart.
//

#include "scripts.hpp"

#include "lua_sources.hpp"

#include <timewheel/dq/detail/redis_keys.hpp>

#include <string>
#include <string_view>
#include <utility>

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

// The prelude names the KEYS as the table orders them:
// "local KD, KL, ... = KEYS[1], KEYS[2], ...".
constexpr bool declares_shard_keys(std::string_view lua) {
    constexpr auto& keys = redis_keys::shard_keys;
    static_assert(keys.size() <= 9, "KEYS[i] is read as one digit");
    for (auto at = lua.find("local "); at != std::string_view::npos;
         at = lua.find("local ", at + 1)) {
        std::size_t pos = at + 6;
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

// The prelude, then `helpers` (lua/<part>.lua that only some scripts need), then the body.
redis::script make(std::string_view body, std::string_view helpers = {}) {
    std::string text;
    text.reserve(lua::prelude.size() + helpers.size() + body.size());
    text.append(lua::prelude).append(helpers).append(body);
    return redis::script(std::move(text));
}

} // namespace

// clang-format off
const redis::script& config() { static const redis::script s{std::string(lua::config)}; return s; }
const redis::script& submit() { static const redis::script s = make(lua::submit); return s; }
const redis::script& cancel() { static const redis::script s = make(lua::cancel); return s; }
const redis::script& reschedule() { static const redis::script s = make(lua::reschedule); return s; }
const redis::script& status() { static const redis::script s = make(lua::status); return s; }
const redis::script& list_dead() { static const redis::script s = make(lua::list_dead); return s; }
const redis::script& requeue_dead() { static const redis::script s = make(lua::requeue_dead); return s; }
const redis::script& delete_dead() { static const redis::script s = make(lua::delete_dead); return s; }
const redis::script& claim() { static const redis::script s = make(lua::claim); return s; }
const redis::script& start() { static const redis::script s = make(lua::start); return s; }
const redis::script& renew() { static const redis::script s = make(lua::renew); return s; }
const redis::script& ack() { static const redis::script s = make(lua::ack); return s; }
const redis::script& release() { static const redis::script s = make(lua::release); return s; }
const redis::script& earliest_due() { static const redis::script s = make(lua::earliest_due); return s; }
const redis::script& schedule() { static const redis::script s = make(lua::schedule, lua::schedule_helpers); return s; }
const redis::script& schedule_list() { static const redis::script s = make(lua::schedule_list); return s; }
const redis::script& schedule_due() { static const redis::script s = make(lua::schedule_due); return s; }
const redis::script& list_tasks() { static const redis::script s = make(lua::list_tasks); return s; }
const redis::script& task_entries() { static const redis::script s = make(lua::task_entries); return s; }
const redis::script& count_tasks() { static const redis::script s = make(lua::count_tasks); return s; }
const redis::script& materialise() { static const redis::script s = make(lua::materialise, lua::schedule_helpers); return s; }
// clang-format on

} // namespace timewheel::dq::detail::scripts
