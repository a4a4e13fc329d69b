// The browsers whose tabs the dashboard counts: for each web watcher (`aw-watcher-web-<key>_…`
// buckets), the window watcher's `app` names and a regex of further names under which
// its windows appear. The one definition: the query builders in Rust
// (`aw_models::queries`) read this object at compile time, so it stays strict JSON between
// `= ` and the final `;`. The order matters: a bucket id naming two keys is the later one's.
export const BROWSERS = {
  "chrome": {"names": ["Google Chrome", "Google-chrome", "chrome.exe", "google-chrome-stable", "Chromium", "Chromium-browser", "Chromium-browser-chromium", "chromium.exe", "Google-chrome-beta", "Google-chrome-unstable", "Brave-browser"], "regex": "(?i)^(google[ -]?chrome|chromium)"},
  "firefox": {"names": ["Firefox", "Firefox.exe", "firefox", "firefox.exe", "Firefox Developer Edition", "firefoxdeveloperedition", "Firefox-esr", "Firefox Beta", "Nightly", "firefox-aurora"], "regex": "(?i)^(firefox|librewolf|waterfox)"},
  "opera": {"names": ["opera.exe", "Opera"], "regex": "(?i)^opera"},
  "brave": {"names": ["brave.exe"], "regex": "(?i)^brave"},
  "edge": {"names": ["msedge.exe", "Microsoft Edge"], "regex": "(?i)^(microsoft[ -]?edge|msedge)"},
  "vivaldi": {"names": ["Vivaldi-stable", "Vivaldi-snapshot", "vivaldi.exe"], "regex": "(?i)^vivaldi"},
  "orion": {"names": ["Orion"], "regex": "(?i)^orion"},
  "yandex": {"names": ["Yandex"], "regex": "(?i)^yandex"}
};
