// Bonsai's service worker: the toolbar button opens the chat side panel of the window (one model and
// one conversation across its tabs). Being a click on the extension, it also lets the panel read the
// tab it was clicked on (activeTab): the "read the current page" tool uses that.
chrome.action.onClicked.addListener((tab) => {
  chrome.sidePanel.open({ windowId: tab.windowId });
});
