// Bonsai's service worker: clicking the toolbar button opens the runtime page in a tab.
chrome.action.onClicked.addListener(() => {
  chrome.tabs.create({ url: chrome.runtime.getURL("page.html") });
});
