//
// test/server/dispatch_settings.cpp
//
// The worker's settings of timewheeld: the flags and TIMEWHEELD_* variables parse into
// service::settings, bad values are refused naming the flag, and dispatch::options_from() turns
// them into the callback client's and the worker's options.
//
#define BOOST_TEST_MODULE server_dispatch_settings
#include <boost/test/unit_test.hpp>

#include <timewheeld/dispatch/dispatcher.hpp>
#include <timewheeld/service/settings.hpp>

#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace service = timewheeld::service;
namespace dispatch = timewheeld::dispatch;
using namespace std::chrono_literals;

namespace {

service::parsed_settings parse(std::vector<const char*> args,
                               std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), "timewheeld");
    return service::parse_settings(static_cast<int>(args.size()), args.data(),
                                   [&](const char* name) -> const char* {
                                       const auto it = env.find(name);
                                       return it == env.end() ? nullptr : it->second.c_str();
                                   });
}

bool refused(std::vector<const char*> args, std::map<std::string, std::string> env,
             const std::string& naming) {
    try {
        parse(std::move(args), std::move(env));
    } catch (const std::invalid_argument& e) {
        BOOST_TEST_MESSAGE(e.what());
        return std::string(e.what()).find(naming) != std::string::npos;
    }
    return false;
}

} // namespace

BOOST_AUTO_TEST_CASE(defaults_run_a_worker_that_refuses_loopback) {
    const auto s = parse({}).settings;
    BOOST_TEST(s.worker);
    // ... on the embedded store, in the working directory: nothing else to run.
    BOOST_TEST(s.store == "sqlite:timewheeld.db");
    BOOST_TEST(!s.callback_allow_loopback);
    BOOST_TEST(!s.callback_allow_private);
    BOOST_TEST(s.callback_allow_hosts.empty());
    BOOST_TEST(s.result_deadline == 300000ms);
    BOOST_TEST(s.max_awaiting_results == 10000u);
    const auto o = dispatch::options_from(s);
    BOOST_TEST(o.max_awaiting_results == 10000u);
    BOOST_TEST(!o.client.policy.allow_loopback);
    BOOST_TEST(o.client.signing_secrets.empty());
    BOOST_TEST(o.client.host_signing_secrets.empty());
    BOOST_TEST(!o.client.signature_v1);
    // One set of callback limits: the worker reads with those the API validated with.
    BOOST_TEST(o.payload.max_url_length == s.validation.callback.max_url_length);
    BOOST_TEST(o.payload.max_headers == s.validation.callback.max_headers);
    BOOST_TEST(o.payload.max_header_bytes == s.validation.callback.max_header_bytes);
    BOOST_TEST(o.payload.max_body == s.validation.callback.max_body);
    BOOST_TEST(o.payload.max_timeout == s.validation.callback.max_timeout);
}

BOOST_AUTO_TEST_CASE(callback_limits_reach_the_api_and_the_worker) {
    const auto s =
        parse({"--max-callback-url-bytes", "100", "--max-callback-headers", "3"}).settings;
    BOOST_TEST(s.validation.callback.max_url_length == 100u);
    BOOST_TEST(s.validation.callback.max_headers == 3u);
    const auto o = dispatch::options_from(s);
    BOOST_TEST(o.payload.max_url_length == 100u);
    BOOST_TEST(o.payload.max_headers == 3u);
    BOOST_TEST(o.client.max_url_length == 100u);
}

BOOST_AUTO_TEST_CASE(signing_secrets_rotation_hosts_and_v1) {
    // Comma-separated and repeated: one v2 entry each.
    auto s =
        parse({"--signing-secret", "new,old", "--signing-secret", "older", "--signing-secret-for",
               "Hooks.Example=h1,h2", "--signing-secret-for", "b.example=b1", "--signing-send-v1"})
            .settings;
    BOOST_TEST(s.signing_secrets == (std::vector<std::string>{"new", "old", "older"}),
               boost::test_tools::per_element());
    BOOST_REQUIRE(s.signing_secrets_for.size() == 2u);
    BOOST_TEST(s.signing_secrets_for.at("hooks.example") == (std::vector<std::string>{"h1", "h2"}),
               boost::test_tools::per_element());
    BOOST_TEST(s.signing_secrets_for.at("b.example") == (std::vector<std::string>{"b1"}),
               boost::test_tools::per_element());
    BOOST_TEST(s.signing_send_v1);
    const auto o = dispatch::options_from(s);
    BOOST_TEST(o.client.signing_secrets.size() == 3u);
    BOOST_TEST(o.client.host_signing_secrets.at("hooks.example").size() == 2u);
    BOOST_TEST(o.client.signature_v1);

    // The variables: ';' between hosts; a flag replaces a variable's list.
    s = parse({}, {{"TIMEWHEELD_SIGNING_SECRET", "e1,e2"},
                   {"TIMEWHEELD_SIGNING_SECRET_FOR", "a.example=x;b.example=y,z"}})
            .settings;
    BOOST_TEST(s.signing_secrets.size() == 2u);
    BOOST_TEST(s.signing_secrets_for.at("b.example").size() == 2u);
    s = parse({"--signing-secret", "flag"}, {{"TIMEWHEELD_SIGNING_SECRET", "e1,e2"}}).settings;
    BOOST_TEST(s.signing_secrets == (std::vector<std::string>{"flag"}),
               boost::test_tools::per_element());

    BOOST_TEST(refused({"--signing-secret", "a,,b"}, {}, "--signing-secret"));
    BOOST_TEST(refused({"--signing-secret-for", "nohost"}, {}, "--signing-secret-for"));
    BOOST_TEST(refused({"--signing-secret-for", "=s"}, {}, "--signing-secret-for"));
    BOOST_TEST(refused({"--signing-secret-for", "h="}, {}, "--signing-secret-for"));
    BOOST_TEST(refused({}, {{"TIMEWHEELD_SIGNING_SECRET_FOR", "h=x;;"}}, "--signing-secret-for"));
}

BOOST_AUTO_TEST_CASE(flags_set_every_worker_setting) {
    const auto s =
        parse({"--no-worker", "--callback-allow-loopback", "--callback-allow-private",
               "--callback-allow-hosts", "A.example.com,*.hooks.test", "--signing-secret", "s3cret",
               "--callback-timeout-ms", "1500", "--max-per-host", "3", "--result-deadline-ms",
               "2500", "--worker-concurrency", "7", "--max-awaiting-results", "0"})
            .settings;
    BOOST_TEST(!s.worker);
    BOOST_TEST(s.callback_allow_loopback);
    BOOST_TEST(s.callback_allow_private);
    BOOST_TEST(s.callback_allow_hosts ==
                   (std::vector<std::string>{"a.example.com", "*.hooks.test"}),
               boost::test_tools::per_element());
    BOOST_TEST(s.signing_secrets == (std::vector<std::string>{"s3cret"}),
               boost::test_tools::per_element());
    BOOST_TEST(s.callback_timeout == 1500ms);
    BOOST_TEST(s.max_per_host == 3u);
    BOOST_TEST(s.result_deadline == 2500ms);
    BOOST_TEST(s.worker_concurrency == 7u);
    BOOST_TEST(s.max_awaiting_results == 0u);

    const auto o = dispatch::options_from(s);
    BOOST_TEST(o.client.policy.allow_loopback);
    BOOST_TEST(o.client.policy.allow_private);
    BOOST_TEST(o.client.policy.allowed_hosts.size() == 2u);
    BOOST_TEST(o.client.signing_secrets == (std::vector<std::string>{"s3cret"}),
               boost::test_tools::per_element());
    BOOST_TEST(o.client.total_timeout == 1500ms);
    BOOST_TEST(o.client.connect_timeout <= 1500ms);
    BOOST_TEST(o.client.max_connections_per_host == 3u);
    BOOST_TEST(o.result_deadline == 2500ms);
    BOOST_TEST(o.concurrency == 7u);
    BOOST_TEST(o.max_awaiting_results == 0u);
}

BOOST_AUTO_TEST_CASE(variables_set_switches_and_a_flag_wins) {
    const auto s =
        parse({"--callback-allow-private=false"}, {{"TIMEWHEELD_CALLBACK_ALLOW_LOOPBACK", "1"},
                                                   {"TIMEWHEELD_CALLBACK_ALLOW_PRIVATE", "true"},
                                                   {"TIMEWHEELD_NO_WORKER", "0"},
                                                   {"TIMEWHEELD_SIGNING_SECRET", "from-env"}})
            .settings;
    BOOST_TEST(s.callback_allow_loopback);
    BOOST_TEST(!s.callback_allow_private);
    BOOST_TEST(s.worker);
    BOOST_TEST(s.signing_secrets == (std::vector<std::string>{"from-env"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bad_values_are_refused_naming_the_setting) {
    BOOST_TEST(refused({"--callback-allow-loopback=maybe"}, {}, "--callback-allow-loopback"));
    BOOST_TEST(refused({}, {{"TIMEWHEELD_NO_WORKER", "yes please"}}, "TIMEWHEELD_NO_WORKER"));
    BOOST_TEST(refused({"--max-per-host", "0"}, {}, "--max-per-host"));
    BOOST_TEST(refused({"--worker-concurrency", "x"}, {}, "--worker-concurrency"));
    BOOST_TEST(refused({"--result-deadline-ms", "0"}, {}, "--result-deadline-ms"));
    BOOST_TEST(refused({"--max-awaiting-results", "-1"}, {}, "--max-awaiting-results"));
    BOOST_TEST(refused({"--callback-allow-hosts", "a.test,,b.test"}, {}, "--callback-allow-hosts"));
}

BOOST_AUTO_TEST_CASE(help_lists_the_worker_settings) {
    const auto help = service::help_text();
    for (const char* flag :
         {"--no-worker", "--callback-allow-loopback", "--callback-allow-private",
          "--callback-allow-hosts", "--signing-secret", "--callback-timeout-ms", "--max-per-host",
          "--result-deadline-ms", "--worker-concurrency", "TIMEWHEELD_SIGNING_SECRET",
          "--signing-secret-for", "--signing-send-v1"}) {
        BOOST_TEST(help.find(flag) != std::string::npos, flag);
    }
}

BOOST_AUTO_TEST_CASE(lease_ms_sets_the_lease_of_the_claims) {
    BOOST_TEST(parse({}).settings.lease == 0ms); // derived: 30 s, or 3 x the callback timeout
    const auto s = parse({"--lease-ms", "2000"}).settings;
    BOOST_TEST(s.lease == 2000ms);
    BOOST_TEST(dispatch::options_from(s).lease == 2000ms);
    BOOST_TEST(parse({}, {{"TIMEWHEELD_LEASE_MS", "1500"}}).settings.lease == 1500ms);
    BOOST_TEST(refused({"--lease-ms", "0"}, {}, "--lease-ms"));
    BOOST_TEST(service::help_text().find("--lease-ms") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_materialiser_runs_by_default_and_its_window_covers_a_period) {
    const auto d = parse({}).settings;
    BOOST_TEST(d.scheduler);
    BOOST_TEST(d.schedule_window == 5000ms);
    BOOST_TEST(!parse({"--no-scheduler"}).settings.scheduler);
    const auto s = parse({"--schedule-window-ms", "800", "--schedule-period-ms", "200",
                          "--schedule-grace-ms", "3000"})
                       .settings;
    BOOST_TEST(s.schedule_window == 800ms);
    BOOST_TEST(s.schedule_period == 200ms);
    BOOST_TEST(s.schedule_grace == 3000ms);
    // A window shorter than a period: occurrences could come due before a pass made them.
    BOOST_TEST(refused({"--schedule-window-ms", "500", "--schedule-period-ms", "1000"}, {},
                       "--schedule-window-ms"));
    BOOST_TEST(refused({"--schedule-grace-ms", "0"}, {}, "--schedule-grace-ms"));
}

// The flag tables (--help, docs/server.md) show each flag's default from the option table,
// while the struct's initialisers are what the service runs with: each shown default, given
// as the flag's value, must leave the settings as they are without it ("off" for a switch).
BOOST_AUTO_TEST_CASE(every_default_the_flag_tables_show_is_the_one_the_service_runs_with) {
    const auto defaults = parse({}).settings;
    BOOST_TEST((defaults == service::settings{}));
    std::size_t checked = 0;
    std::istringstream table(service::flags_markdown());
    for (std::string row; std::getline(table, row);) {
        // | `--flag VALUE` | default | variable | help |
        const auto tick = row.find("`--");
        const auto bar = row.find('|', tick);
        if (row.rfind("|", 0) != 0 || tick == std::string::npos || bar == std::string::npos) {
            continue;
        }
        const auto name_end = row.find_first_of(" `", tick + 3);
        const std::string flag = row.substr(tick + 1, name_end - tick - 1);
        const auto next = row.find('|', bar + 1);
        std::string shown = row.substr(bar + 1, next - bar - 1);
        shown.erase(0, shown.find_first_not_of(' '));
        shown.erase(shown.find_last_not_of(' ') + 1);
        if (shown.empty()) {
            continue;
        }
        const std::string arg = shown == "off" ? flag + "=false" : flag;
        std::vector<const char*> args{arg.c_str()};
        if (shown != "off") {
            args.push_back(shown.c_str());
        }
        BOOST_TEST_CONTEXT(flag << " shown as default '" << shown << "'") {
            BOOST_TEST((parse(args).settings == defaults));
        }
        ++checked;
    }
    BOOST_TEST(checked >= 20u, "rows with a default: " << checked);
}
