// The web UI's default categories (aw-webui's set): what the dashboard uses while the
// `classes` setting is unset. The one definition: the Rust client library
// (`aw_models::classes::default_classes`, re-exported by aw-client-rust) and the tests read this array at compile
// time, so it stays strict JSON between `= ` and the final `;`.
export const DEFAULT_CLASSES = [
  {"name": ["Work"], "rule": {"type": "regex", "regex": "Google Docs|libreoffice|ReText"}, "data": {"color": "#00d68f"}},
  {"name": ["Work", "Programming"], "rule": {"type": "regex", "regex": "GitHub|Stack Overflow|BitBucket|Gitlab|vim|Spyder|kate|Ghidra|Scite"}},
  {"name": ["Work", "Programming", "ActivityWatch"], "rule": {"type": "regex", "regex": "ActivityWatch|aw-", "ignore_case": true}},
  {"name": ["Work", "Image"], "rule": {"type": "regex", "regex": "Gimp|Inkscape"}},
  {"name": ["Work", "Video"], "rule": {"type": "regex", "regex": "Kdenlive"}},
  {"name": ["Work", "Audio"], "rule": {"type": "regex", "regex": "Audacity"}},
  {"name": ["Work", "3D"], "rule": {"type": "regex", "regex": "Blender"}},
  {"name": ["Media"], "rule": {"type": "none"}, "data": {"color": "#00b4d8"}},
  {"name": ["Media", "Games"], "rule": {"type": "regex", "regex": "Minecraft|RimWorld"}},
  {"name": ["Media", "Video"], "rule": {"type": "regex", "regex": "YouTube|Plex|VLC"}},
  {"name": ["Media", "Social Media"], "rule": {"type": "regex", "regex": "reddit|Facebook|Twitter|Instagram|devRant", "ignore_case": true}},
  {"name": ["Media", "Music"], "rule": {"type": "regex", "regex": "Spotify|Deezer", "ignore_case": true}},
  {"name": ["Comms"], "rule": {"type": "none"}, "data": {"color": "#f4b400"}},
  {"name": ["Comms", "IM"], "rule": {"type": "regex", "regex": "Messenger|Telegram|Signal|WhatsApp|Rambox|Slack|Riot|Element|Discord|Nheko|NeoChat|Mattermost"}},
  {"name": ["Comms", "Email"], "rule": {"type": "regex", "regex": "Gmail|Thunderbird|mutt|alpine"}},
  {"name": ["Uncategorized"], "rule": {"type": "none"}, "data": {"color": "#9aa0a6"}}
];
